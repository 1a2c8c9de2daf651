/*
 * test_header_c99.c -- session.h compiles as strict C99 (-std=c99 -Wall -Wextra -Werror
 * -pedantic), twice (include guard), and its types have the contract's sizes and values.
 */
#include "session.h"
#include "session.h" /* the include guard makes a second inclusion harmless */

#include <stdio.h>
#include <string.h>

/* compile-time checks, C99 style */
typedef char status_is_32_bits[sizeof(SessionStatus) == 4 ? 1 : -1];
typedef char state_is_32_bits[sizeof(SessionState) == 4 ? 1 : -1];
typedef char codes_are_stable[(SESSION_OK == 0 && SESSION_ERR_INVALID_ARGUMENT == 1 && SESSION_ERR_INVALID_JSON == 2 &&
                               SESSION_ERR_INVALID_ENTRY == 3 && SESSION_ERR_DUPLICATE_ID == 4 &&
                               SESSION_ERR_MISSING_PARENT == 5 && SESSION_ERR_CYCLE == 6 &&
                               SESSION_ERR_UNKNOWN_LEAF == 7 && SESSION_ERR_CORRUPT_LINE == 8 &&
                               SESSION_ERR_NEEDS_REPAIR == 9 && SESSION_ERR_TAINTED == 10 && SESSION_ERR_IO == 11 &&
                               SESSION_ERR_INTERNAL == 12 && SESSION_ERR_LOCKED == 13 &&
                               SESSION_ERR_FILE_CHANGED == 14 && SESSION_ERR_READ_ONLY == 15 &&
                               SESSION_ERR_WRONG_PROCESS == 16)
                                  ? 1
                                  : -1];
typedef char states_are_stable[(SESSION_STATE_READY == 0 && SESSION_STATE_NEEDS_REPAIR == 1 &&
                                SESSION_STATE_TAINTED == 2)
                                   ? 1
                                   : -1];
typedef char max_depth[SESSION_MAX_DEPTH == 128 ? 1 : -1];

/* Every function session.h declares: the list is generated from the header at build time
 * (gen_functions.py), so a new function is checked without editing this file. Each is
 * taken by its exact prototype, so each must also be exported by the library (the link
 * fails otherwise). */
#include "session_functions.h"

#define NAME_OF(ret, name, params, npointers, args, optional, names) #name,
static const char *const every_function[] = {SESSION_FOR_EACH_FUNCTION(NAME_OF) NULL};

int main(void)
{
    char *out = NULL;
    SessionStatus st;
    int count = 0;
    /* a pointer of each function's exact type, initialised from the function */
#define TAKE(ret, name, params, npointers, args, optional, names) \
    {                                                              \
        ret(*fn) params = name;                                    \
        if (fn == NULL) {                                          \
            fprintf(stderr, "FAIL: %s is NULL\n", #name);          \
            return 1;                                              \
        }                                                          \
        count++;                                                   \
    }
    SESSION_FOR_EACH_FUNCTION(TAKE)
#undef TAKE
    if (count != SESSION_FUNCTION_COUNT || count < 18 || every_function[count] != NULL) {
        fprintf(stderr, "FAIL: %d functions taken, the generated list has %d\n", count, SESSION_FUNCTION_COUNT);
        return 1;
    }

    st = session_recover_jsonl(NULL, 0, &out);
    if (st != SESSION_OK || out == NULL || strcmp(out, "{\"entries\":[],\"warnings\":[]}") != 0) {
        fprintf(stderr, "FAIL: C99 call of session_recover_jsonl(NULL, 0): %s\n", out ? out : "(null)");
        return 1;
    }
    session_string_free(out);
    printf("PASS test_header_c99: session.h is clean C99; %d functions by prototype, %s ... %s; libsession %s, %s\n",
           count, every_function[0], every_function[count - 1], session_version(), session_status_name(SESSION_OK));
    return 0;
}
