// plugboard dashboard: the diff component. It parses a `git diff` patch into
// files and hunks, draws one file unified or split with line numbers and
// syntax colours, a page of lines at a time, and lets a reviewer comment on
// any line; feedback() turns the comments into the text the agent gets.
// Built with DOM nodes and textContent only: a patch is the agent's output,
// untrusted, and never becomes markup.
"use strict";

window.PlugboardDiff = (() => {
  // ---- parse ------------------------------------------------------------------

  // unquote reads a path git wrote C-quoted ("a/caf\303\251 \"x\""): the
  // octal escapes are UTF-8 bytes.
  function unquote(p) {
    if (!p.startsWith("\"") || !p.endsWith("\"") || p.length < 2) return p;
    const bytes = [], esc = {n: 10, t: 9, r: 13, a: 7, b: 8, f: 12, v: 11, "\\": 92, "\"": 34};
    const body = p.slice(1, -1);
    for (let i = 0; i < body.length; i++) {
      const ch = body[i];
      if (ch === "\\" && /^[0-7]{3}/.test(body.slice(i + 1, i + 4))) { bytes.push(parseInt(body.slice(i + 1, i + 4), 8)); i += 3; continue; }
      if (ch === "\\" && esc[body[i + 1]] !== undefined) { bytes.push(esc[body[i + 1]]); i++; continue; }
      for (const b of new TextEncoder().encode(ch)) bytes.push(b);
    }
    return new TextDecoder().decode(new Uint8Array(bytes));
  }
  // stripPrefix reads the path of a ---/+++ line: git ends one holding a
  // space with a tab.
  function stripPrefix(p) { p = unquote(p.replace(/\t+$/, "")); return p === "/dev/null" ? null : p.replace(/^[ab]\//, ""); }

  // headerPaths reads "diff --git a/X b/Y". Paths with spaces are ambiguous
  // there; the usual case (same path both sides) splits in the middle, and
  // the ---/+++ or rename lines that follow correct it anyway.
  function headerPaths(rest) {
    const h = (rest.length - 1) / 2;
    if (Number.isInteger(h) && rest[h] === " " && rest.startsWith("a/") && rest.slice(h + 1).startsWith("b/") && rest.slice(2, h) === rest.slice(h + 3)) {
      return [rest.slice(2, h), rest.slice(h + 3)];
    }
    const m = rest.match(/^(?:"a\/(.*?)"|a\/(.*)) (?:"b\/(.*)"|b\/(.*))$/);
    if (!m) return ["", ""];
    return [m[1] !== undefined ? unquote("\"" + m[1] + "\"") : m[2], m[3] !== undefined ? unquote("\"" + m[3] + "\"") : m[4]];
  }

  // parse splits a patch into files. A hunk ends when its line counts are
  // used up; a patch cut off mid-hunk (the server's size cap) keeps what was
  // read, and the file says truncated.
  function parse(patch) {
    const files = [];
    let f = null, hunk = null, oldNo = 0, newNo = 0, oldLeft = 0, newLeft = 0;
    const lines = String(patch || "").replace(/\r\n/g, "\n").split("\n");
    if (lines.length && lines[lines.length - 1] === "") lines.pop();
    for (const line of lines) {
      if (hunk && (oldLeft > 0 || newLeft > 0 || line.startsWith("\\"))) {
        const c = line[0], text = line.slice(1);
        if (c === "+" && newLeft > 0) { hunk.lines.push({kind: "add", old: null, new: newNo++, text}); f.added++; newLeft--; continue; }
        if (c === "-" && oldLeft > 0) { hunk.lines.push({kind: "del", old: oldNo++, new: null, text}); f.deleted++; oldLeft--; continue; }
        // An empty line is a context line whose space an editor stripped.
        if ((c === " " || line === "") && oldLeft > 0 && newLeft > 0) { hunk.lines.push({kind: "ctx", old: oldNo++, new: newNo++, text}); oldLeft--; newLeft--; continue; }
        if (c === "\\") { hunk.lines.push({kind: "meta", old: null, new: null, text: line}); continue; }
        // Anything else ends the hunk early: read it as a header below.
      }
      if (hunk) { if (oldLeft > 0 || newLeft > 0) f.truncated = true; hunk = null; }
      if (line.startsWith("diff --git ")) {
        f = {path: "", oldPath: null, status: "modified", binary: false, added: 0, deleted: 0, hunks: [], truncated: false};
        files.push(f);
        [f.oldPath, f.path] = headerPaths(line.slice(11));
        continue;
      }
      if (!f) continue;
      if (line.startsWith("new file mode")) f.status = "added";
      else if (line.startsWith("deleted file mode")) f.status = "deleted";
      else if (line.startsWith("rename from ")) { f.status = "renamed"; f.oldPath = unquote(line.slice(12)); }
      else if (line.startsWith("rename to ")) { f.status = "renamed"; f.path = unquote(line.slice(10)); }
      else if (line.startsWith("copy from ")) { f.status = "added"; f.oldPath = unquote(line.slice(10)); }
      else if (line.startsWith("copy to ")) { f.status = "added"; f.path = unquote(line.slice(8)); }
      else if (line.startsWith("Binary files ") || line.startsWith("GIT binary patch")) f.binary = true;
      else if (line.startsWith("--- ")) { const p = stripPrefix(line.slice(4)); if (p) f.oldPath = p; }
      else if (line.startsWith("+++ ")) { const p = stripPrefix(line.slice(4)); if (p) f.path = p; }
      else {
        const hm = line.match(/^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/);
        if (hm) {
          oldNo = +hm[1]; newNo = +hm[3];
          oldLeft = hm[2] === undefined ? 1 : +hm[2]; newLeft = hm[4] === undefined ? 1 : +hm[4];
          hunk = {header: line, oldStart: oldNo, newStart: newNo, lines: []};
          f.hunks.push(hunk);
        }
      }
    }
    if (hunk && (oldLeft > 0 || newLeft > 0)) f.truncated = true;
    for (const x of files) {
      if (x.status === "deleted" && !x.path) x.path = x.oldPath;
      if (x.status !== "renamed" && x.oldPath === x.path) x.oldPath = null;
    }
    return files;
  }

  // ---- syntax colours ---------------------------------------------------------

  const words = (s) => new Set(s.split(" "));
  const C = {line: ["//"], block: [["/*", "*/"]], str: ["\"", "'"]};
  const LANGS = {
    go: {...C, str: ["\"", "'", "`"], kw: words("break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var nil true false iota")},
    js: {...C, str: ["\"", "'", "`"], kw: words("async await break case catch class const continue debugger default delete do else export extends finally for from function if import in instanceof let new of return static super switch this throw try typeof var void while yield null undefined true false interface type enum implements")},
    py: {line: ["#"], block: [["\"\"\"", "\"\"\""], ["'''", "'''"]], str: ["\"", "'"], kw: words("and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield None True False self")},
    sh: {line: ["#"], hashWs: true, block: [], str: ["\"", "'"], kw: words("if then else elif fi for while until do done case esac in function return local export set unset echo exit")},
    rs: {...C, str: ["\""], kw: words("as async await break const continue crate else enum extern false fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait true type unsafe use where while")},
    c: {...C, kw: words("auto break case char class const continue default do double else enum extern float for goto if int long namespace new private protected public return short signed sizeof static struct switch template this typedef union unsigned void volatile while boolean extends final implements import package super throws try catch throw null true false")},
    json: {line: [], block: [], str: ["\""], kw: words("true false null")},
    yaml: {line: ["#"], hashWs: true, block: [], str: ["\"", "'"], kw: words("true false null yes no on off")},
    css: {line: [], block: [["/*", "*/"]], str: ["\"", "'"], kw: words("important inherit initial none auto")},
    html: {line: [], block: [["<!--", "-->"]], str: ["\"", "'"], kw: new Set(), tags: true},
    md: {line: [], block: [["```", "```"]], str: ["`"], kw: new Set(), heads: true},
    sql: {line: ["--"], block: [["/*", "*/"]], str: ["'"], kw: words("select from where and or not insert into values update set delete create table index on join left right inner outer group by order limit as null primary key references default alter add drop")},
    toml: {line: ["#"], block: [], str: ["\"", "'"], kw: words("true false")},
  };
  const EXT = {go: "go", js: "js", mjs: "js", cjs: "js", ts: "js", tsx: "js", jsx: "js", py: "py", sh: "sh", bash: "sh", zsh: "sh",
    rs: "rs", java: "c", c: "c", h: "c", cc: "c", cpp: "c", hpp: "c", cs: "c", kt: "c", swift: "c", json: "json", yaml: "yaml", yml: "yaml",
    css: "css", scss: "css", html: "html", htm: "html", xml: "html", svg: "html", md: "md", sql: "sql", toml: "toml"};
  function langOf(path) {
    const base = (path || "").split("/").pop().toLowerCase();
    if (base === "makefile" || base === "dockerfile") return LANGS.sh;
    const ext = base.includes(".") ? base.split(".").pop() : "";
    return LANGS[EXT[ext]] || null;
  }

  // tokens splits one line into [class, text] pieces; state carries an
  // open block comment or string from line to line within a hunk.
  function tokens(text, lang, state) {
    const out = [];
    if (!lang) { out.push(["", text]); return out; }
    let i = 0, plain = "";
    const flush = () => { if (plain) { out.push(["", plain]); plain = ""; } };
    while (i < text.length) {
      if (state.close) {
        const j = text.indexOf(state.close, i);
        const end = j < 0 ? text.length : j + state.close.length;
        out.push([state.cls, text.slice(i, end)]);
        i = end;
        if (j >= 0) state.close = null;
        continue;
      }
      const rest = text.slice(i);
      // A "#" comment in shell and YAML starts a word ($#, a#b are not).
      const line = lang.line.find((m) => rest.startsWith(m)) && (!lang.hashWs || i === 0 || /\s/.test(text[i - 1]));
      if (line) { flush(); out.push(["pd-tok-com", rest]); break; }
      const block = lang.block.find(([open]) => rest.startsWith(open));
      if (block) { flush(); state.close = block[1]; state.cls = /^["'`]/.test(block[0]) ? "pd-tok-str" : "pd-tok-com"; out.push([state.cls, block[0]]); i += block[0].length; continue; }
      const q = lang.str.find((s) => rest.startsWith(s));
      if (q) {
        flush();
        let j = i + 1;
        while (j < text.length && text[j] !== q) j += text[j] === "\\" ? 2 : 1;
        if (j >= text.length && q === "`") { state.close = "`"; state.cls = "pd-tok-str"; }
        out.push(["pd-tok-str", text.slice(i, Math.min(j + 1, text.length))]);
        i = j + 1;
        continue;
      }
      if (lang.heads && i === 0 && /^#{1,6}\s/.test(text)) { out.push(["pd-tok-kw", text]); break; }
      if (lang.tags) {
        const t = rest.match(/^<\/?[A-Za-z][\w:.-]*/);
        if (t) { flush(); out.push(["pd-tok-kw", t[0]]); i += t[0].length; continue; }
      }
      const w = rest.match(/^[A-Za-z_$][\w$]*/);
      if (w) {
        if (lang.kw.has(w[0]) || lang.kw.has(w[0].toLowerCase()) && lang === LANGS.sql) { flush(); out.push(["pd-tok-kw", w[0]]); } else plain += w[0];
        i += w[0].length;
        continue;
      }
      const n = rest.match(/^(?:0x[\da-fA-F]+|\d+(?:\.\d+)?(?:e[+-]?\d+)?)/);
      if (n && !/[\w$]/.test(text[i - 1] || "")) { flush(); out.push(["pd-tok-num", n[0]]); i += n[0].length; continue; }
      plain += text[i++];
    }
    flush();
    return out;
  }

  // ---- render -----------------------------------------------------------------

  function el(tag, cls, ...kids) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    for (const k of kids) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
    return e;
  }
  function codeCell(line, lang, state, cls) {
    const td = el("td", "pd-code " + (cls || ""));
    const sign = line.kind === "add" ? "+" : line.kind === "del" ? "-" : line.kind === "meta" ? "" : " ";
    td.append(el("span", "pd-sign", sign));
    if (line.kind === "meta") { td.append(el("span", "pd-meta", line.text)); return td; }
    for (const [c, t] of tokens(line.text, lang, state)) td.append(c ? el("span", c, t) : document.createTextNode(t));
    return td;
  }
  function button(cls, text, label) {
    const b = el("button", cls, text);
    b.type = "button";
    if (label) b.setAttribute("aria-label", label);
    return b;
  }
  const lineLabel = (path, side, n) => `Comment on ${path} line ${n}` + (side === "old" ? " (old)" : "");

  // render draws one file. opts: mode "unified"|"split", pageLines,
  // comments (shared array), onChange, readOnly.
  function render(file, opts) {
    opts = Object.assign({}, opts);
    if (opts.mode !== "split") opts.mode = "unified";
    if (!(opts.pageLines > 0)) opts.pageLines = 300;
    if (!Array.isArray(opts.comments)) opts.comments = [];
    if (typeof opts.onChange !== "function") opts.onChange = () => {};
    const path = file.path;
    const section = el("section", "pd-file");
    section.dataset.path = path;
    let mode = opts.mode, collapsed = false;
    const head = el("div", "pd-head");
    const title = el("span", "pd-path", file.status === "renamed" && file.oldPath ? file.oldPath + " → " + path : path);
    // The counts read "+3 −2" on screen and in words to a screen reader.
    const counts = el("span", "pd-counts");
    const shownCounts = el("span", null, el("span", "pd-plus", "+" + file.added), " ", el("span", "pd-minus", "−" + file.deleted));
    shownCounts.setAttribute("aria-hidden", "true");
    counts.append(shownCounts, el("span", "pd-sr", `${file.added} added, ${file.deleted} deleted lines`));
    const modeBtns = ["unified", "split"].map((m) => {
      const b = button("pd-mode", m, m + " view of " + path);
      b.dataset.pdMode = m;
      b.setAttribute("aria-pressed", m === mode ? "true" : "false");
      b.addEventListener("click", () => {
        if (mode === m) return;
        mode = m;
        for (const x of modeBtns) x.setAttribute("aria-pressed", x.dataset.pdMode === m ? "true" : "false");
        draw();
      });
      return b;
    });
    const fold = button("pd-fold", "Hide", "Hide the diff of " + path);
    fold.setAttribute("aria-expanded", "true");
    fold.addEventListener("click", () => {
      collapsed = !collapsed;
      body.hidden = collapsed;
      fold.textContent = collapsed ? "Show" : "Hide";
      fold.setAttribute("aria-expanded", collapsed ? "false" : "true");
      fold.setAttribute("aria-label", (collapsed ? "Show" : "Hide") + " the diff of " + path);
    });
    head.append(title, " ", el("span", "pd-status pd-status-" + file.status, file.status), " ", counts,
      el("span", "pd-tools", ...modeBtns, fold));
    const body = el("div", "pd-body");
    section.append(head, body);
    const lang = langOf(path);

    // rows flattens the hunks into what one table row shows: a hunk
    // header, a line, or (split) a pair of lines: the deletions of a run
    // beside its additions, in order.
    function rowsOf() {
      const rows = [];
      for (const hk of file.hunks) {
        rows.push({hunk: hk.header});
        if (mode === "unified") { for (const l of hk.lines) rows.push({line: l}); continue; }
        let dels = [], adds = [];
        const flush = () => {
          for (let i = 0; i < Math.max(dels.length, adds.length); i++) rows.push({left: dels[i] || null, right: adds[i] || null});
          dels = []; adds = [];
        };
        for (const l of hk.lines) {
          if (l.kind === "del") dels.push(l);
          else if (l.kind === "add") adds.push(l);
          else if (l.kind === "meta") { flush(); rows.push({meta: l}); }
          else { flush(); rows.push({left: l, right: l}); }
        }
        flush();
      }
      return rows;
    }

    // Paging counts the rows of lines (a hunk header is free): a huge
    // diff builds pageLines rows, then more on demand.
    let rows, tbody, more, shown, built, total, stateOld, stateNew;
    function draw() {
      body.replaceChildren();
      if (file.binary) { body.append(note("Binary file: not shown.")); return; }
      if (!file.hunks.length) { body.append(note(file.status === "renamed" ? "Renamed without changes." : "No line changes.")); return; }
      stateOld = {}; stateNew = {};
      rows = rowsOf();
      shown = 0; built = 0;
      total = rows.filter((r) => !r.hunk).length;
      const table = el("table", "pd-diff pd-" + mode);
      table.append(el("caption", "pd-sr", `Diff of ${path} (${mode})`));
      const thead = el("thead", "pd-cols"), tr = el("tr");
      const cols = mode === "unified" ? ["Old line", "New line", "Code"] : ["Old line", "Old code", "New line", "New code"];
      for (const c of cols) { const th = el("th", null, el("span", "pd-sr", c)); th.scope = "col"; tr.append(th); }
      thead.append(tr);
      tbody = el("tbody");
      table.append(thead, tbody);
      body.append(el("div", "pd-scroll", table));
      more = button("pd-more", "");
      more.addEventListener("click", () => { page(); if (!more.hidden) more.focus(); });
      body.append(more);
      if (file.truncated) body.append(note("The patch was cut off here (size limit): the rest of this file is not shown."));
      page();
    }
    function note(text) { return el("p", "pd-note", text); }
    function page() {
      const frag = document.createDocumentFragment();
      let n = 0;
      while (built < rows.length && n < opts.pageLines) {
        const r = rows[built++];
        if (!r.hunk) n++;
        frag.append(...rowEls(r));
      }
      shown += n;
      tbody.append(frag);
      const left = total - shown;
      more.hidden = left <= 0;
      more.textContent = `Show ${Math.min(left, opts.pageLines)} more lines (${left} left)`;
    }

    function numCell(line, side) {
      const td = el("td", "pd-num");
      const n = line ? (side === "old" ? line.old : line.new) : null;
      if (n === null || n === undefined) return td;
      td.append(el("span", "pd-n", String(n)));
      const commentable = !opts.readOnly && (side === "new" ? line.kind === "add" || line.kind === "ctx" : line.kind === "del");
      if (commentable) {
        const b = button("pd-add-comment", "+", lineLabel(path, side, n));
        b.addEventListener("click", () => openForm(td.parentElement, line, side, n));
        td.append(b);
      }
      return td;
    }
    const span = () => (mode === "unified" ? 3 : 4);
    function wide(cls, ...kids) {
      const tr = el("tr", cls), td = el("td", null, ...kids);
      td.colSpan = span();
      tr.append(td);
      return tr;
    }
    function rowEls(r) {
      if (r.hunk) { stateOld = {}; stateNew = {}; return [wide("pd-hunk", r.hunk)]; }
      if (r.meta) return [wide("pd-meta-row", el("span", "pd-meta", r.meta.text))];
      const tr = el("tr");
      if (mode === "unified") {
        const l = r.line;
        tr.className = "pd-" + l.kind;
        let code;
        if (l.kind === "del") code = codeCell(l, lang, stateOld);
        else if (l.kind === "add") code = codeCell(l, lang, stateNew);
        else { code = codeCell(l, lang, stateNew); stateOld = Object.assign({}, stateNew); }
        tr.append(numCell(l.kind === "add" ? null : l, "old"), numCell(l.kind === "del" ? null : l, "new"), code);
      } else {
        const L = r.left, R = r.right;
        tr.className = "pd-pair" + (L === R ? " pd-ctx" : "");
        tr.append(numCell(L, "old"), L ? codeCell(L, lang, stateOld, "pd-" + L.kind) : el("td", "pd-code pd-empty"),
          numCell(R, "new"), R ? codeCell(R, lang, stateNew, "pd-" + R.kind) : el("td", "pd-code pd-empty"));
      }
      const out = [tr];
      for (const c of opts.comments) if (c.path === path && matches(c, r)) out.push(commentRow(c));
      return out;
    }
    function matches(c, r) {
      const ls = r.line ? [r.line] : [r.left, r.right];
      return ls.some((l) => l && (c.side === "old" ? l.kind === "del" && l.old === c.line : l.kind !== "del" && l.new === c.line));
    }
    function commentRow(c) {
      const row = wide("pd-comment-row");
      const box = el("div", "pd-comment", el("strong", null, `Line ${c.line}${c.side === "old" ? " (old)" : ""}: `), el("span", "pd-comment-text", c.text));
      if (!opts.readOnly) {
        const del = button("pd-delete", "Delete", `Delete the comment on ${c.path} line ${c.line}` + (c.side === "old" ? " (old)" : ""));
        del.addEventListener("click", () => {
          const i = opts.comments.indexOf(c);
          if (i >= 0) opts.comments.splice(i, 1);
          row.remove();
          opts.onChange();
        });
        box.append(" ", del);
      }
      row.firstChild.append(box);
      return row;
    }
    function openForm(after, line, side, n) {
      const next = after.nextElementSibling;
      if (next && next.classList.contains("pd-form-row")) { next.querySelector("textarea").focus(); return; }
      const ta = el("textarea", "pd-textarea");
      ta.setAttribute("aria-label", lineLabel(path, side, n));
      const save = button("pd-save", "Save"), cancel = button("pd-cancel", "Cancel");
      const row = wide("pd-form-row", ta, el("div", "pd-form-buttons", save, " ", cancel));
      // Focus goes back to the line's button, for the keyboard's sake.
      const back = () => { const b = after.querySelector(".pd-add-comment"); if (b) b.focus(); };
      const close = () => { row.remove(); back(); };
      save.addEventListener("click", () => {
        const text = ta.value.trim();
        if (!text) { ta.focus(); return; }
        const c = {path: path, side: side, line: n, text: text, code: line.text};
        opts.comments.push(c);
        row.replaceWith(commentRow(c));
        back();
        opts.onChange();
      });
      cancel.addEventListener("click", close);
      ta.addEventListener("keydown", (ev) => {
        if (ev.key === "Escape") { ev.preventDefault(); ev.stopPropagation(); close(); }
        if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); save.click(); }
      });
      after.after(row);
      ta.focus();
    }
    draw();
    return section;
  }

  // ---- feedback ---------------------------------------------------------------

  // feedback is the request-changes text: the summary, then each comment
  // with its file, line and the line's code (at most 200 characters), by
  // file, then line, then side (new before old), then the order written.
  function feedback(comments, summary) {
    const parts = [];
    if (summary && String(summary).trim()) parts.push(String(summary).trim());
    const sorted = [...(comments || [])].sort((a, b) =>
      (a.path < b.path ? -1 : a.path > b.path ? 1 : 0) || a.line - b.line || (a.side === b.side ? 0 : a.side === "new" ? -1 : 1));
    if (sorted.length) {
      parts.push("Comments on the diff:\n" + sorted.map((c) => {
        const code = String(c.code || "").trim();
        return `- ${c.path}:${c.line} (${c.side}): ${c.text}` + (code ? `\n  > ${code.length > 200 ? code.slice(0, 199) + "…" : code}` : "");
      }).join("\n"));
    }
    return parts.join("\n\n");
  }

  return {parse, render, feedback};
})();
