"""Type stubs for libsession (the runtime module is libsession/__init__.py)."""

import os
from types import TracebackType
from typing import Any, Callable, Dict, List, Literal, Mapping, Optional, Sequence, Type, Union, overload

_Json = Any
_Text = Union[str, bytes, bytearray, memoryview]
_EntryArg = Union[Mapping[str, Any], _Text]
_PathArg = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
_Budget = Union[float, Mapping[str, float]]
_OnDefect = Literal["error", "skip", "keep", "synthesize"]
_Profile = Literal["auto", "none", "pi", "claude-code", "codex"]

__version__: str
STATUS: Dict[str, int]

def library_version() -> str: ...
def status_name(status: int) -> str: ...

class SessionError(Exception):
    status: int
    code: str
    message: str
    details: Dict[str, Any]
    json: Optional[str]
    cause: Optional["SessionError"]
    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: Optional[Dict[str, Any]] = ...,
        json_text: Optional[str] = ...,
    ) -> None: ...

class StoreClosedError(ValueError): ...

def error_class(status: int, code: Optional[str] = ...) -> Type[SessionError]: ...

# One subclass per status; made at import from session_status_name, so the library may
# add more (reach them with error_class() or getattr()).
class InvalidArgument(SessionError): ...
class InvalidJson(SessionError): ...
class InvalidEntry(SessionError): ...
class DuplicateId(SessionError): ...
class MissingParent(SessionError): ...
class Cycle(SessionError): ...
class UnknownLeaf(SessionError): ...
class CorruptLine(SessionError): ...
class NeedsRepair(SessionError): ...
class Tainted(SessionError): ...
class Io(SessionError): ...
class Internal(SessionError): ...
class Locked(SessionError): ...
class FileChanged(SessionError): ...
class ReadOnly(SessionError): ...
class WrongProcess(SessionError): ...
class InvalidCompaction(SessionError): ...
class ToolPairing(SessionError): ...
class Cancelled(SessionError): ...

def __getattr__(name: str) -> Type[SessionError]: ...
@overload
def parse_entry(entry: _EntryArg, *, raw: Literal[False] = ...) -> Dict[str, Any]: ...
@overload
def parse_entry(entry: _EntryArg, *, raw: Literal[True]) -> str: ...
def path_to(entries: Union[List[Any], _Text], leaf: _Text, *, raw: bool = ...) -> _Json: ...
def messages_on_path(entries: Union[List[Any], _Text], leaf: _Text, *, raw: bool = ...) -> _Json: ...
def recover_jsonl(data: _Text, *, raw: bool = ...) -> _Json: ...
def repair(path: _PathArg, *, raw: bool = ...) -> _Json: ...
def build_context(
    entries: Union[List[Any], _Text],
    leaf: _Text,
    *,
    budget: Optional[_Budget] = ...,
    on_defect: Optional[_OnDefect] = ...,
    summary_message: Optional[bool] = ...,
    summary_prefix: Optional[str] = ...,
    summary_suffix: Optional[str] = ...,
    strict_roles: Optional[bool] = ...,
    synthesized_text: Optional[str] = ...,
    profile: Optional[_Profile] = ...,
    raw: bool = ...,
) -> _Json: ...
def list_sessions(
    directory: _PathArg,
    *,
    recursive: Optional[bool] = ...,
    limit: Optional[int] = ...,
    sort: Optional[Literal["modifiedMs", "path"]] = ...,
    raw: bool = ...,
) -> _Json: ...

def search(
    directory: _PathArg,
    query: str,
    *,
    limit: Optional[int] = ...,
    roles: Optional[Sequence[str]] = ...,
    latest_path_only: Optional[bool] = ...,
    raw: bool = ...,
) -> _Json: ...

def export(
    format: Literal["pi", "claude-code", "codex"],
    src: _PathArg,
    out: _PathArg,
    *,
    leaf: Optional[str] = ...,
    raw: bool = ...,
) -> _Json: ...

def secrets(
    path: _PathArg,
    *,
    rules: Optional[Sequence[Dict[str, str]]] = ...,
    extra_rules: Optional[Sequence[Dict[str, str]]] = ...,
    allow: Optional[Sequence[str]] = ...,
    raw: bool = ...,
) -> _Json: ...

def redact(
    src: _PathArg,
    dst: Optional[_PathArg] = ...,
    *,
    in_place: bool = ...,
    rules: Optional[Sequence[Dict[str, str]]] = ...,
    extra_rules: Optional[Sequence[Dict[str, str]]] = ...,
    allow: Optional[Sequence[str]] = ...,
    raw: bool = ...,
) -> _Json: ...

class Store:
    report: Dict[str, Any]
    @classmethod
    def open(
        cls,
        path: _PathArg,
        *,
        durability: Optional[Literal["none", "fsync", "fsync_batch"]] = ...,
        read_only: Optional[bool] = ...,
        lock: Optional[bool] = ...,
        check_identity: Optional[bool] = ...,
        salvage: Optional[bool] = ...,
        strict_roles: Optional[bool] = ...,
    ) -> "Store": ...
    @classmethod
    def postgres(
        cls,
        conninfo: _Text,
        session_id: _Text,
        *,
        durability: Optional[str] = ...,
        strict_roles: Optional[bool] = ...,
    ) -> "Store": ...
    @classmethod
    def memory(cls, *, strict_roles: Optional[bool] = ...) -> "Store": ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def state(self) -> Literal["ready", "needs_repair", "tainted"]: ...
    def __enter__(self) -> "Store": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...
    @overload
    def append(self, entry: _EntryArg, *, raw: Literal[False] = ...) -> int: ...
    @overload
    def append(self, entry: _EntryArg, *, raw: Literal[True]) -> str: ...
    def entries(self, *, raw: bool = ...) -> _Json: ...
    def read(self, *, raw: bool = ...) -> _Json: ...
    def path_to(self, leaf: _Text, *, raw: bool = ...) -> _Json: ...
    def messages_on_path(self, leaf: _Text, *, raw: bool = ...) -> _Json: ...
    def children(self, id: _Text, *, raw: bool = ...) -> _Json: ...
    def roots(self, *, raw: bool = ...) -> _Json: ...
    def leaves(self, *, raw: bool = ...) -> _Json: ...
    def latest_leaf(self, *, raw: bool = ...) -> _Json: ...
    def tree(
        self,
        *,
        after_seq: Optional[int] = ...,
        limit: Optional[int] = ...,
        leaf: Optional[str] = ...,
        preview_chars: Optional[int] = ...,
        raw: bool = ...,
    ) -> _Json: ...
    def labels(self, *, raw: bool = ...) -> _Json: ...
    def build_context(
        self,
        leaf: _Text,
        *,
        budget: Optional[_Budget] = ...,
        estimate: Optional[Callable[[Dict[str, Any]], float]] = ...,
        on_defect: Optional[_OnDefect] = ...,
        summary_message: Optional[bool] = ...,
        summary_prefix: Optional[str] = ...,
        summary_suffix: Optional[str] = ...,
        strict_roles: Optional[bool] = ...,
        synthesized_text: Optional[str] = ...,
        profile: Optional[_Profile] = ...,
        raw: bool = ...,
    ) -> _Json: ...
