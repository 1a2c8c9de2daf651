/* libsession's session view. Session text is data: the DOM is built with
   createElement and textContent only, links only for http and https URLs.
   Rendering is lazy: the tree is a virtual list, the branch is shown a chunk at a time. */
(function () {
  'use strict';
  var CHUNK = 150, ROW = 22, LONG_CHARS = 1200, LONG_LINES = 14, PREVIEW = 100;
  var INDENT_CAP = 24, MD_MAX = 200000, INLINE_MAX = 20000;

  var data = JSON.parse(document.getElementById('session-data').textContent);
  /* The outline (parents, tool pairing, compactions: see src/view/outline.rs) is all the
     tree and the choice of a branch need; an entry is parsed when it is shown. A large
     session's outline and entries come deflated (zlib format, base64) and are inflated
     by the browser itself; a small one's are plain JSON. */
  if (typeof data.entriesDeflate === 'string') {
    Promise.all([inflate(data.outlineDeflate), inflate(data.entriesDeflate)]).then(function (both) {
      performance.mark('session-inflated');
      var decoder = new TextDecoder(), outline = JSON.parse(decoder.decode(both[0]));
      var bytes = new Uint8Array(both[1]), sizes = outline.sizes, start = new Float64Array(sizes.length + 1);
      start[0] = 1; /* after the array's '[', each entry then its ',' */
      for (var k = 0; k < sizes.length; k++) start[k + 1] = start[k] + sizes[k] + 1;
      return [outline, function (at) { return JSON.parse(decoder.decode(bytes.subarray(start[at], start[at] + sizes[at]))); },
        function () { return JSON.parse(decoder.decode(bytes)); }];
    }).then(function (read) { boot(read[0], read[1], read[2]); }, failed);
  } else boot(data.outline, function (at) { return data.entries[at]; }, function () { return data.entries; });

  function inflate(base64) {
    if (typeof DecompressionStream !== 'function') {
      return Promise.reject(new Error('this browser has no DecompressionStream (Chrome 80, Firefox 113, Safari 16.4 and later have it)'));
    }
    var bin = atob(base64), bytes = new Uint8Array(bin.length);
    for (var k = 0; k < bin.length; k++) bytes[k] = bin.charCodeAt(k);
    return new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate'))).arrayBuffer();
  }
  function failed(err) {
    var box = document.createElement('div');
    box.className = 'empty';
    box.textContent = 'The session could not be read: ' + (err && err.message ? err.message : String(err));
    document.body.appendChild(box);
    document.body.dataset.ready = '1';
  }

  function boot(outline, read, readAll) {
    performance.mark('session-parsed');
    var n = outline.parents.length, parsed = new Array(n), allParsed = false;
    /* entries[at]: the entry at commit position at, parsed the first time it is asked for. */
    function entry(at) { return parsed[at] || (parsed[at] = read(at)); }
    /* Every entry at once (one JSON.parse is faster than many), before a search of a long branch. */
    function parseAll() {
      if (allParsed) return;
      allParsed = true;
      var all = readAll();
      if (Array.isArray(all) && all.length === n) for (var k = 0; k < n; k++) if (!parsed[k]) parsed[k] = all[k];
    }
    var i, k;
    var parent = new Int32Array(n), maxSub = new Int32Array(n), kids = new Array(n), roots = [];
    for (i = 0; i < n; i++) {
      var d = outline.parents[i], p = d > 0 && d <= i ? i - d : -1;
      parent[i] = p;
      maxSub[i] = i;
      if (p < 0) roots.push(i); else (kids[p] || (kids[p] = [])).push(i);
    }
    for (i = n - 1; i >= 0; i--) if (parent[i] >= 0 && maxSub[i] > maxSub[parent[i]]) maxSub[parent[i]] = maxSub[i];
    /* Tool pairing by key (one key per call id): the keys of each message's calls, in the
       order of its toolCall blocks, and the key each result answers. */
    var calls = outline.calls, callsAt = new Int32Array(n).fill(-1), answers = new Int32Array(n).fill(-1), keys = 0;
    for (k = 0; k < calls.length; k += 2 + calls[k + 1]) {
      callsAt[calls[k]] = k + 1;
      for (i = 0; i < calls[k + 1]; i++) keys = Math.max(keys, calls[k + 2 + i] + 1);
    }
    for (k = 0; k < outline.results.length; k += 2) {
      answers[outline.results[k]] = outline.results[k + 1];
      keys = Math.max(keys, outline.results[k + 1] + 1);
    }
    /* kept[at]: for a compaction, its first kept entry (-1: null, -2: no such entry); -3 otherwise. */
    var kept = new Int32Array(n).fill(-3);
    for (k = 0; k < outline.compactions.length; k += 2) kept[outline.compactions[k]] = outline.compactions[k + 1];
    function callKey(at, ordinal) {
      var c = callsAt[at];
      return c >= 0 && ordinal < calls[c] ? calls[c + 1 + ordinal] : -1;
    }
    var labels = new Map();
    (Array.isArray(data.labels) ? data.labels : []).forEach(function (l) { labels.set(l.targetId, l.label); });
    var latest = outline.latest;

    function el(tag, cls, text) {
      var e = document.createElement(tag);
      if (cls) e.className = cls;
      if (text != null) e.textContent = String(text);
      return e;
    }
    function short(text, max) {
      text = String(text).replace(/\s+/g, ' ');
      return text.length > max ? text.slice(0, max - 1) + '\u2026' : text;
    }
    function json(value) {
      try { return typeof value === 'string' ? value : JSON.stringify(value, null, 2); } catch (err) { return String(value); }
    }
    function blocks(m) {
      var c = m && m.content;
      if (typeof c === 'string') return [{ type: 'text', text: c }];
      return Array.isArray(c) ? c.filter(function (b) { return b && typeof b === 'object'; }) : [];
    }
    function isMessage(e) { return e.type === 'message' && e.message && typeof e.message === 'object'; }
    function role(e) { return isMessage(e) ? String(e.message.role) : ''; }
    function when(ts) {
      if (typeof ts !== 'number' || !isFinite(ts)) return '';
      var d = new Date(ts);
      return isNaN(d.getTime()) ? '' : d.toISOString().slice(0, 19).replace('T', ' ');
    }
    function resultText(m) {
      return blocks(m).map(function (b) { return b.type === 'text' ? String(b.text) : '[' + b.type + ']'; }).join('\n');
    }

    /* What a tree row says of an entry, and what the search looks in. */
    function kindName(e) {
      if (e.type === 'message') return role(e) || 'message';
      return String(e.type);
    }
    function preview(e) {
      if (e.type === 'compaction') return short(json(e.summary), PREVIEW);
      if (e.type === 'metadata') return short(e.key + ' = ' + json(e.value), PREVIEW);
      if (!isMessage(e)) return '';
      if (role(e) === 'toolResult') return short(resultText(e.message), PREVIEW);
      var b = blocks(e.message), j;
      for (j = 0; j < b.length; j++) if (b[j].type === 'text' && b[j].text) return short(b[j].text, PREVIEW);
      for (j = 0; j < b.length; j++) if (b[j].type === 'toolCall') return short(b[j].name + ' ' + json(b[j].arguments), PREVIEW);
      return '';
    }
    var searchCache = new Map();
    function searchText(at) {
      var s = searchCache.get(at);
      if (s != null) return s;
      var e = entry(at), parts = [kindName(e)], ordinal = 0;
      if (e.type === 'compaction') parts.push(json(e.summary));
      else if (e.type === 'metadata') parts.push(e.key, json(e.value));
      else if (isMessage(e)) {
        if (role(e) === 'toolResult') parts.push(String(e.message.toolName), resultText(e.message));
        blocks(e.message).forEach(function (b) {
          if (b.type === 'text') parts.push(b.text);
          else if (b.type === 'thinking') parts.push(b.thinking);
          else if (b.type === 'toolCall') {
            parts.push(b.name, json(b.arguments));
            var r = resultFor(callKey(at, ordinal++));
            if (r >= 0) parts.push(resultText(entry(r).message));
          }
        });
      }
      s = parts.join('\n').toLowerCase();
      searchCache.set(at, s);
      return s;
    }

    /* Markdown, a safe subset: paragraphs, fenced code, lists, headings as bold lines,
       inline code, emphasis and links (http and https only; any other link stays text). */
    var INLINE = /(`+)([^`]+?)\1|\*\*([^*]+)\*\*|\*([^*\s][^*]*)\*|\[([^\]\n]+)\]\(([^)\s]+)\)/g;
    var ITEM = /^\s*([-*+]|\d+[.)])\s+(.*)$/;
    function link(label, url, raw) {
      if (!/^https?:\/\/\S+$/i.test(url)) return document.createTextNode(raw);
      var a = el('a', null, label);
      a.href = url;
      a.rel = 'noopener noreferrer';
      a.target = '_blank';
      return a;
    }
    function inline(parent, text) {
      if (text.length > INLINE_MAX) { parent.appendChild(document.createTextNode(text)); return; }
      var last = 0, m;
      INLINE.lastIndex = 0;
      while ((m = INLINE.exec(text))) {
        if (m.index > last) parent.appendChild(document.createTextNode(text.slice(last, m.index)));
        if (m[2] != null) parent.appendChild(el('code', null, m[2]));
        else if (m[3] != null) parent.appendChild(el('strong', null, m[3]));
        else if (m[4] != null) parent.appendChild(el('em', null, m[4]));
        else parent.appendChild(link(m[5], m[6], m[0]));
        last = INLINE.lastIndex;
      }
      if (last < text.length) parent.appendChild(document.createTextNode(text.slice(last)));
    }
    function md(text) {
      var box = el('div', 'md');
      text = String(text);
      if (text.length > MD_MAX) { box.appendChild(el('pre', null, text)); return box; }
      var lines = text.split('\n'), k = 0, para = [], item;
      function flush() {
        if (!para.length) return;
        var p = el('p');
        inline(p, para.join('\n'));
        box.appendChild(p);
        para = [];
      }
      while (k < lines.length) {
        var line = lines[k], fence = /^\s*(```|~~~)/.exec(line);
        if (fence) {
          flush();
          var code = [];
          for (k++; k < lines.length && lines[k].trim().indexOf(fence[1]) !== 0; k++) code.push(lines[k]);
          k++;
          var pre = el('pre');
          pre.appendChild(el('code', null, code.join('\n')));
          box.appendChild(pre);
        } else if ((item = ITEM.exec(line))) {
          flush();
          var ordered = /\d/.test(item[1]), list = el(ordered ? 'ol' : 'ul');
          while (k < lines.length && (item = ITEM.exec(lines[k])) && /\d/.test(item[1]) === ordered) {
            var li = el('li');
            inline(li, item[2]);
            list.appendChild(li);
            k++;
          }
          box.appendChild(list);
        } else if (!line.trim()) {
          flush();
          k++;
        } else if (/^#{1,6}\s/.test(line)) {
          flush();
          var h = el('p'), strong = el('strong');
          inline(strong, line.replace(/^#+\s+/, ''));
          h.appendChild(strong);
          box.appendChild(h);
          k++;
        } else {
          para.push(line);
          k++;
        }
      }
      flush();
      return box;
    }

    /* A <details> whose body is built when it is first opened. */
    function lazyDetails(cls, summary, open, fill) {
      var d = el('details', cls), filled = false;
      d.appendChild(el('summary', null, summary));
      d.addEventListener('toggle', function () {
        if (d.open && !filled) { filled = true; fill(d); }
      });
      if (open) { filled = true; fill(d); d.open = true; }
      return d;
    }
    function isLong(text) {
      return text.length > LONG_CHARS || text.split('\n', LONG_LINES + 1).length > LONG_LINES;
    }
    function image(b) {
      if (typeof b.data !== 'string' || !/^image\/(png|jpeg|gif|webp)$/.test(b.mimeType)) return el('span', 'head', '[image]');
      var img = el('img', 'inline');
      img.alt = 'image';
      img.src = 'data:' + b.mimeType + ';base64,' + b.data.replace(/[^A-Za-z0-9+\/=]/g, '');
      return img;
    }
    function resultBody(m) {
      var text = resultText(m), lines = text.split('\n').length;
      var d = lazyDetails('result', 'Result' + (m.isError ? ' (error)' : '') + ' \u00b7 ' + lines + ' line' + (lines === 1 ? '' : 's'), !isLong(text), function (d) {
        d.appendChild(el('pre', null, text));
        blocks(m).forEach(function (b) { if (b.type === 'image') d.appendChild(image(b)); });
      });
      return d;
    }
    function toolCall(b, key) {
      var box = el('div', 'tool');
      box.appendChild(el('span', 'name', b.name));
      var args = json(b.arguments);
      if (isLong(args)) box.appendChild(lazyDetails('args', 'arguments', false, function (d) { d.appendChild(el('pre', null, args)); }));
      else box.appendChild(el('pre', null, args));
      var r = resultFor(key);
      if (r >= 0) {
        var m = entry(r).message;
        if (m.isError) box.className += ' error';
        box.appendChild(resultBody(m));
      } else box.appendChild(el('div', 'head', 'no result on this branch'));
      return box;
    }
    function head(box, name, e) {
      var h = el('div', 'head');
      h.appendChild(el('b', null, name));
      h.appendChild(document.createTextNode(when(e.timestamp) + '  ' + e.id));
      box.appendChild(h);
    }
    var ROLES = { user: 1, assistant: 1, toolResult: 1 };
    function entryEl(at) {
      var e = entry(at), box;
      if (e.type === 'metadata') {
        var v = e.value, text = e.key === 'session.label' && v && typeof v === 'object'
          ? 'label ' + (v.label == null ? 'cleared' : '\u201c' + v.label + '\u201d') + ' on ' + v.targetId
          : e.key + ' = ' + short(json(v), 160);
        box = el('div', 'marker', '\u00b7 ' + text);
      } else if (e.type === 'compaction') {
        box = el('div', 'msg compaction');
        head(box, 'Compaction', e);
        box.appendChild(typeof e.summary === 'string' ? md(e.summary) : el('pre', null, json(e.summary)));
        box.appendChild(el('div', 'head', e.firstKeptEntryId == null ? 'keeps nothing from before it' : 'keeps from ' + e.firstKeptEntryId));
      } else if (isMessage(e)) {
        var r = role(e), m = e.message;
        box = el('div', 'msg ' + (ROLES[r] ? r : 'other'));
        head(box, r === 'toolResult' ? 'tool result: ' + m.toolName : r, e);
        if (r === 'toolResult') box.appendChild(resultBody(m));
        else {
          var bs = blocks(m), ordinal = 0;
          bs.forEach(function (b) {
            if (b.type === 'text') box.appendChild(md(b.text));
            else if (b.type === 'thinking') box.appendChild(lazyDetails('thinking', 'Thinking', false, function (d) { d.appendChild(md(b.thinking)); }));
            else if (b.type === 'toolCall') box.appendChild(toolCall(b, callKey(at, ordinal++)));
            else if (b.type === 'image') box.appendChild(image(b));
            else box.appendChild(lazyDetails('block', String(b.type), false, function (d) { d.appendChild(el('pre', null, json(b))); }));
          });
          if (!bs.length) box.appendChild(lazyDetails('block', 'message', false, function (d) { d.appendChild(el('pre', null, json(m))); }));
        }
      } else {
        box = el('div', 'msg other');
        head(box, String(e.type), e);
        box.appendChild(el('pre', null, json(e)));
      }
      box.dataset.id = e.id;
      return box;
    }

    /* The chosen branch: its path, its tool results paired with their calls, the runs
       replaced by a compaction folded, and the list shown (filtered by the search). */
    var path = [], onPath = new Uint8Array(n), chosen = -1, paired = new Int32Array(n);
    /* paired[x]: 1 + the entry whose tool call the result x answers (0: shown by itself);
       resultAt[key]: the result shown with the call of that key, callAt[key]: its call. */
    var resultAt = new Int32Array(keys), callAt = new Int32Array(keys);
    function resultFor(key) { return key >= 0 ? resultAt[key] : -1; }
    var list = [], query = '';
    function setBranch(at, descend) {
      var leaf = at;
      while (descend && kids[leaf]) {
        leaf = kids[leaf].reduce(function (best, c) { return maxSub[c] > maxSub[best] ? c : best; });
      }
      path = [];
      for (var x = leaf; x >= 0; x = parent[x]) path.push(x);
      path.reverse();
      onPath.fill(0);
      paired.fill(0);
      resultAt.fill(-1);
      callAt.fill(-1);
      searchCache = new Map();
      for (var k = 0; k < path.length; k++) {
        x = path[k];
        onPath[x] = 1;
        var c = callsAt[x], key = answers[x];
        if (c >= 0) for (var j = 0; j < calls[c]; j++) callAt[calls[c + 1 + j]] = x;
        if (key >= 0 && callAt[key] >= 0 && resultAt[key] < 0) { resultAt[key] = x; paired[x] = callAt[key] + 1; }
      }
      chosen = at;
    }
    function buildList() {
      list = [];
      if (query) {
        if (path.length > CHUNK) parseAll();
        path.forEach(function (x) { if (!paired[x] && searchText(x).indexOf(query) >= 0) list.push({ at: x }); });
        return;
      }
      var by = new Int32Array(path.length).fill(-1), pos = null;
      for (var c = path.length - 1; c >= 0; c--) {
        var first = kept[path[c]];
        if (first === -3) continue;
        if (!pos) {
          pos = new Map();
          path.forEach(function (x, k) { pos.set(x, k); });
        }
        var from = first === -1 ? c : pos.get(first);
        if (from == null || from > c) continue;
        for (var k = from - 1; k >= 0 && by[k] < 0; k--) by[k] = c;
      }
      for (var j = 0; j < path.length;) {
        if (by[j] < 0) { if (!paired[path[j]]) list.push({ at: path[j] }); j++; continue; }
        var start = j;
        while (j < path.length && by[j] === by[start]) j++;
        list.push({ folded: path.slice(start, j) });
      }
    }
    function itemEl(item) {
      if (item.at != null) return entryEl(item.at);
      var run = item.folded;
      return lazyDetails('folded', run.length + ' entr' + (run.length === 1 ? 'y' : 'ies') + ' replaced by a compaction', false, function (d) {
        chunked(d, run.filter(function (x) { return !paired[x]; }).map(function (x) { return { at: x }; }), 0, false);
      });
    }
    /* Appends items[from…] to box a chunk at a time, with a "show more" button (clicked
       by itself when it scrolls into view, where auto is set). */
    var observer = 'IntersectionObserver' in window ? new IntersectionObserver(function (seen) {
      seen.forEach(function (s) { if (s.isIntersecting) s.target.click(); });
    }, { root: null }) : null;
    function chunked(box, items, from, auto) {
      var to = Math.min(items.length, from + CHUNK), frag = document.createDocumentFragment();
      for (var k = from; k < to; k++) frag.appendChild(itemEl(items[k]));
      box.appendChild(frag);
      if (to >= items.length) return;
      var more = el('button', 'more', 'Show more (' + (items.length - to) + ' left)');
      more.addEventListener('click', function () {
        if (observer) observer.unobserve(more);
        more.remove();
        chunked(box, items, to, auto);
      });
      box.appendChild(more);
      if (auto && observer) observer.observe(more);
    }

    /* Layout. */
    var side = el('div'), title = el('h1', null, data.title), stats = el('div'), tree = el('div'), rowsBox = el('div');
    var main = el('div'), bar = el('div'), search = el('input'), info = el('span'), messages = el('div');
    side.id = 'side'; stats.id = 'stats'; tree.id = 'tree'; rowsBox.id = 'rows';
    main.id = 'main'; bar.id = 'bar'; search.id = 'search'; info.id = 'info'; messages.id = 'messages';
    search.type = 'search';
    search.placeholder = 'Search this branch';
    tree.appendChild(rowsBox);
    side.appendChild(title); side.appendChild(stats); side.appendChild(tree);
    bar.appendChild(search); bar.appendChild(info);
    main.appendChild(bar); main.appendChild(messages);
    document.body.appendChild(side);
    document.body.appendChild(main);
    var leafCount = 0;
    for (i = 0; i < n; i++) if (!kids[i]) leafCount++;
    stats.textContent = n + ' entries \u00b7 ' + leafCount + ' leaves \u00b7 ' + roots.length + ' root' + (roots.length === 1 ? '' : 's');

    /* The tree: every entry a row in depth-first order, children in commit order,
       indented one step under each branch point; only the rows in view are in the DOM. */
    var rows = [], indents = [], rowOf = new Int32Array(n);
    (function () {
      var stack = [];
      for (var r = roots.length - 1; r >= 0; r--) stack.push(roots[r], 0);
      while (stack.length) {
        var ind = stack.pop(), at = stack.pop(), k = kids[at];
        rowOf[at] = rows.length;
        rows.push(at);
        indents.push(ind);
        if (k) for (var j = k.length - 1; j >= 0; j--) stack.push(k[j], k.length > 1 ? ind + 1 : ind);
      }
    })();
    rowsBox.style.height = rows.length * ROW + 'px';
    function rowEl(r) {
      var at = rows[r], e = entry(at);
      var d = el('div', 'row' + (onPath[at] ? ' path' : '') + (at === chosen ? ' chosen' : ''));
      d.dataset.at = at;
      d.style.top = r * ROW + 'px';
      d.style.paddingLeft = 4 + Math.min(indents[r], INDENT_CAP) * 12 + 'px';
      d.dataset.id = e.id;
      d.title = e.id;
      d.appendChild(el('span', 'dot', kids[at] ? (kids[at].length > 1 ? '\u25c6' : '\u2022') : '\u25cb'));
      d.appendChild(el('span', 'kind', kindName(e)));
      d.appendChild(document.createTextNode(preview(e)));
      if (labels.has(e.id)) d.appendChild(el('span', 'badge', labels.get(e.id)));
      if (at === latest) d.appendChild(el('span', 'badge latest', 'latest'));
      return d;
    }
    var drawPending = false;
    function drawTree() {
      drawPending = false;
      var top = tree.scrollTop, h = tree.clientHeight || 800;
      var first = Math.max(0, Math.floor(top / ROW) - 10), last = Math.min(rows.length, Math.ceil((top + h) / ROW) + 10);
      var frag = document.createDocumentFragment();
      for (var r = first; r < last; r++) frag.appendChild(rowEl(r));
      rowsBox.textContent = '';
      rowsBox.appendChild(frag);
    }
    tree.addEventListener('scroll', function () {
      if (!drawPending) { drawPending = true; requestAnimationFrame(drawTree); }
    });
    window.addEventListener('resize', drawTree);
    rowsBox.addEventListener('click', function (ev) {
      var row = ev.target.closest('.row');
      if (row) show(Number(row.dataset.at), true);
    });

    function render(focus) {
      buildList();
      messages.textContent = '';
      if (!n) { messages.appendChild(el('div', 'empty', 'This session has no entries.')); return; }
      info.textContent = (query ? list.length + ' matching \u00b7 ' : '') + path.length + ' entries on this branch';
      var start = 0;
      /* A tool result shown with its call is found, and marked, in its call's entry. */
      if (focus >= 0 && paired[focus]) focus = paired[focus] - 1;
      if (focus >= 0) {
        for (var k = 0; k < list.length; k++) {
          var it = list[k];
          if (it.at === focus || (it.folded && it.folded.indexOf(focus) >= 0)) { start = Math.max(0, k - 10); break; }
        }
      }
      if (start > 0) {
        var earlier = el('button', 'more', 'Show ' + start + ' earlier');
        earlier.addEventListener('click', function () {
          earlier.remove();
          var frag = document.createDocumentFragment();
          for (var k = 0; k < start; k++) frag.appendChild(itemEl(list[k]));
          messages.insertBefore(frag, messages.firstChild);
        });
        messages.appendChild(earlier);
      }
      chunked(messages, list, start, true);
      if (focus >= 0) {
        var target = messages.querySelector('[data-id="' + CSS.escape(entry(focus).id) + '"]');
        if (target) { target.classList.add('focus'); target.scrollIntoView({ block: 'center' }); }
      } else messages.scrollTop = 0;
    }
    function show(at, clicked) {
      setBranch(at, clicked);
      render(clicked ? at : -1);
      var r = rowOf[at] * ROW, top = tree.scrollTop, h = tree.clientHeight || 800;
      if (r < top || r > top + h - ROW) tree.scrollTop = Math.max(0, r - h / 2);
      drawTree();
    }
    var timer = 0;
    search.addEventListener('input', function () {
      clearTimeout(timer);
      timer = setTimeout(function () { query = search.value.trim().toLowerCase(); render(-1); }, 150);
    });

    var start = outline.leaf >= 0 ? outline.leaf : latest;
    if (start >= 0) show(start, false); else { render(-1); drawTree(); }
    performance.mark('session-drawn');
    document.body.dataset.ready = '1';
  }
})();
