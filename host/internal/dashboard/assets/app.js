// plugboard dashboard: one page, no dependencies. Every board action is a
// tool call through /ui/api/call, which runs the host's own pipeline (policy,
// validation, request_id, decision log) as the signed-in identity.
"use strict";

const state = { me: null, timers: [] };
const main = () => document.getElementById("main");

// h builds an element: h("a", {href: "#/"}, "text", child…).
function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "text") el.textContent = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}

function showError(env) {
  const box = document.getElementById("alert");
  box.replaceChildren(
    h("div", {class: "msg"}, env.message || String(env)),
    env.hint ? h("div", {class: "hint"}, "Hint: " + env.hint) : null,
    env.code ? h("div", {class: "muted mono"}, env.code) : null);
  box.hidden = false;
}
function clearError() { document.getElementById("alert").hidden = true; }

async function api(path, body) {
  const opts = {headers: {}};
  if (body !== undefined) {
    opts.method = "POST";
    opts.headers["Content-Type"] = "application/json";
    opts.headers["X-Plugboard-CSRF"] = state.me && state.me.csrf || "";
    opts.body = JSON.stringify(body);
  }
  const res = await fetch("/ui/api/" + path, opts);
  let data;
  try { data = await res.json(); } catch (e) { data = {ok: false, error: {message: "the server answered " + res.status}}; }
  if (res.status === 401) { state.me = null; render(); }
  return data;
}

// call runs a tool; on an envelope it shows message and hint and returns null.
async function call(tool, args) {
  const data = await api("call", {tool: tool, arguments: args || {}});
  if (!data.ok) { showError(data.error || {message: "failed"}); return null; }
  return data.result;
}

async function operatorRead(path, body) {
  const data = await api(path, body);
  if (!data.ok) { showError(data.error || {message: "failed"}); return null; }
  return data.result;
}

function every(ms, fn) { const t = setInterval(fn, ms); state.timers.push(t); }
function stopTimers() { state.timers.forEach(clearInterval); state.timers = []; }

function badge(s) { return s ? h("span", {class: "badge " + s}, s) : null; }
function short(id) { return id ? id.slice(0, 8) : ""; }

// ---- the page's own session ---------------------------------------------------

// The page records the session it signed in with (its CSRF token) in this
// origin's storage. Another origin can plant a session cookie in this
// browser (cookies ignore ports, and a sibling subdomain can set one for a
// parent domain), but it cannot write this origin's storage: a signed-in
// session the page did not start is shown as the sign-in form, never used,
// and signing in ends it. Without storage (disabled by the user) the check
// is skipped rather than locking the dashboard.
const OWN_SESSION = "plugboard.session";
function ownSession() {
  try { return localStorage.getItem(OWN_SESSION) || ""; } catch (e) { return undefined; }
}
function setOwnSession(csrf) {
  try { if (csrf) localStorage.setItem(OWN_SESSION, csrf); else localStorage.removeItem(OWN_SESSION); } catch (e) { /* no storage */ }
}

// ---- routing ----------------------------------------------------------------

async function render() {
  stopTimers();
  clearError();
  if (!state.me) state.me = await (await fetch("/ui/api/me")).json();
  const own = ownSession();
  if (state.me.signed_in && state.me.login_required && own !== undefined && state.me.csrf !== own) {
    state.me = {signed_in: false, login_required: true, foreign: true};
  }
  const nav = document.getElementById("nav");
  if (!state.me.signed_in) {
    nav.hidden = true;
    document.getElementById("logout").hidden = true;
    document.getElementById("who").textContent = "";
    return loginView(state.me.foreign);
  }
  nav.hidden = false;
  for (const a of nav.querySelectorAll("[data-operator]")) a.hidden = !state.me.operator;
  document.getElementById("who").textContent = state.me.identity + (state.me.role ? " (" + state.me.role + ")" : "");
  document.getElementById("logout").hidden = !state.me.login_required;
  const [, view, id] = (location.hash || "#/").match(/^#\/?([^/]*)\/?(.*)$/) || [];
  for (const a of nav.querySelectorAll("a")) {
    const current = a.getAttribute("href") === "#/" + (view === "project" || view === "task" || view === "attempt" ? "" : view);
    if (current) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  const views = {"": boardView, project: boardView, task: taskView, attempt: attemptView, review: reviewView,
    decisions: decisionsView, inbox: inboxView, plugins: pluginsView, hosts: hostsView};
  await (views[view] || boardView)(decodeURIComponent(id || ""));
}

function page(title, ...kids) {
  document.title = title + " — plugboard";
  main().replaceChildren(h("h1", {}, title), ...kids.flat(Infinity).filter((k) => k !== null && k !== undefined && k !== false));
}

// ---- sign in ----------------------------------------------------------------

function loginView(foreign) {
  const input = h("input", {id: "token", type: "password", autocomplete: "current-password", required: true});
  const form = h("form", {class: "card login", id: "login"},
    h("h1", {}, "Sign in"),
    h("p", {class: "muted"}, "This server needs a bearer token: the one plugboard serve was given, or an agent's."),
    foreign ? h("p", {id: "foreign-session"}, "This browser carries a session this page did not start (another site may have set it). " +
      "Sign in to replace it.") : null,
    h("label", {for: "token"}, "Bearer token"), input,
    h("div", {class: "row"}, h("button", {class: "primary", type: "submit"}, "Sign in")));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const res = await fetch("/ui/api/login", {method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify({token: input.value})});
    const data = await res.json();
    if (!data.ok) return showError(data.error);
    setOwnSession(data.csrf);
    state.me = null;
    render();
  });
  document.title = "Sign in — plugboard";
  main().replaceChildren(form);
  input.focus();
}

// ---- board ------------------------------------------------------------------

const COLUMNS = ["todo", "inprogress", "inreview", "done", "cancelled"];

async function boardView(projectID) {
  const projects = await call("list_projects");
  if (!projects) return page("Board");
  if (!projects.projects.length) {
    return page("Board", h("p", {class: "muted"}, "No project yet. Create one: plugboard project create NAME --repo PATH"));
  }
  const current = projects.projects.find((p) => p.project_id === projectID) || projects.projects[0];
  const select = h("select", {id: "project", onchange: (e) => { location.hash = "#/project/" + e.target.value; }},
    projects.projects.map((p) => h("option", {value: p.project_id, selected: p.project_id === current.project_id}, p.name)));
  const board = h("div", {class: "board", id: "board"});
  const title = h("input", {id: "new-title", required: true, maxlength: 200});
  const desc = h("textarea", {id: "new-description"});
  const create = h("form", {class: "card", id: "create-task"},
    h("h2", {}, "New task"), h("label", {for: "new-title"}, "Title"), title,
    h("label", {for: "new-description"}, "Description (the agent's instructions)"), desc,
    h("div", {class: "row"}, h("button", {class: "primary", type: "submit"}, "Create task")));
  create.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const t = await call("create_task", {project_id: current.project_id, title: title.value, description: desc.value});
    if (t) { title.value = ""; desc.value = ""; clearError(); load(); }
  });
  page("Board", h("div", {class: "row"}, h("div", {}, h("label", {for: "project"}, "Project"), select)), board, create);
  async function load() {
    const tasks = await call("list_tasks", {project_id: current.project_id, limit: 200});
    if (!tasks) return;
    board.replaceChildren(...COLUMNS.map((status) => h("section", {class: "column", "aria-label": status, "data-status": status},
      h("h2", {}, status),
      tasks.tasks.filter((t) => t.status === status).map((t) => h("a", {class: "task", href: "#/task/" + t.task_id, "data-task": t.task_id},
        h("strong", {}, t.title), h("br"),
        t.has_in_progress_attempt ? badge("running") : t.last_attempt_failed ? badge("failed") : t.latest_attempt_id ? h("span", {class: "muted"}, "attempt " + short(t.latest_attempt_id)) : h("span", {class: "muted"}, "no attempt"))))));
  }
  await load();
  every(3000, load);
}

// ---- task -------------------------------------------------------------------

async function taskView(taskID) {
  const task = await call("get_task", {task_id: taskID});
  if (!task) return page("Task");
  const attempts = await call("list_task_attempts", {task_id: taskID});
  const executors = await call("list_executors");
  const exec = h("select", {id: "executor"}, (executors ? executors.executors : []).map((e) => h("option", {value: e.executor || e.name}, e.executor || e.name)));
  const start = h("form", {class: "card", id: "start-attempt"}, h("h2", {}, "Start an attempt"),
    h("label", {for: "executor"}, "Executor"), exec,
    h("div", {class: "row"}, h("button", {class: "primary", type: "submit"}, "Start")));
  start.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const s = await call("start_task_attempt", {task_id: taskID, executor: exec.value});
    if (s) location.hash = "#/attempt/" + s.attempt_id;
  });
  const rows = (attempts ? attempts.attempts : []).map((a) => h("tr", {},
    h("td", {}, h("a", {href: "#/attempt/" + a.attempt_id}, short(a.attempt_id))),
    h("td", {}, a.executor), h("td", {}, badge(a.state)), h("td", {class: "mono"}, a.workspace_branch), h("td", {}, a.created_at)));
  page(task.title,
    h("div", {class: "card"}, h("dl", {class: "kv"},
      h("dt", {}, "Status"), h("dd", {}, badge(task.status)),
      h("dt", {}, "Task id"), h("dd", {class: "mono"}, task.task_id),
      h("dt", {}, "Description"), h("dd", {}, task.description || "—"))),
    h("h2", {}, "Attempts"),
    rows.length ? h("table", {id: "attempts"}, h("thead", {}, h("tr", {}, ["Attempt", "Executor", "State", "Branch", "Created"].map((c) => h("th", {}, c)))), h("tbody", {}, rows))
      : h("p", {class: "muted"}, "No attempt yet."),
    start);
}

// ---- attempt ----------------------------------------------------------------

async function attemptView(attemptID) {
  const status = await call("get_attempt_status", {attempt_id: attemptID});
  if (!status) return page("Attempt");
  const info = h("div", {class: "card", id: "status"});
  function showStatus(s) {
    info.replaceChildren(h("dl", {class: "kv"},
      h("dt", {}, "State"), h("dd", {id: "state"}, badge(s.state)),
      h("dt", {}, "Task"), h("dd", {}, h("a", {href: "#/task/" + s.task_id}, short(s.task_id)), " ", badge(s.task_status)),
      h("dt", {}, "Executor"), h("dd", {}, s.executor),
      h("dt", {}, "Branch"), h("dd", {class: "mono"}, s.workspace_branch),
      s.failure_summary ? [h("dt", {}, "Failure"), h("dd", {}, s.failure_summary)] : null,
      h("dt", {}, "Follow-up queued"), h("dd", {id: "queued"}, s.queued_follow_up ? ["yes ",
        h("button", {type: "button", id: "cancel-queued", onclick: async () => {
          if (await call("follow_up", {action: "cancel", attempt_id: attemptID})) { clearError(); refresh(); }
        }}, "Cancel it")] : "no")));
  }
  showStatus(status);
  const stop = h("button", {class: "danger", type: "button", id: "stop"}, "Stop");
  stop.addEventListener("click", async () => { const r = await call("stop_attempt", {attempt_id: attemptID}); if (r) { clearError(); refresh(); } });

  // Live log: the newest page, then what follows it.
  let channel = "normalized", last = null;
  const log = h("div", {class: "log mono", id: "log", role: "log", "aria-live": "polite", tabindex: "0"});
  const tabs = h("div", {class: "tabs", role: "tablist", "aria-label": "Log channel"},
    ["normalized", "raw"].map((c) => h("button", {type: "button", role: "tab", "aria-selected": c === channel ? "true" : "false", "data-channel": c,
      onclick: () => { channel = c; last = null; log.replaceChildren(); for (const b of tabs.children) b.setAttribute("aria-selected", b.dataset.channel === c ? "true" : "false"); follow(); }}, c)));
  async function follow() {
    const args = {attempt_id: attemptID, channel: channel, limit: 200};
    if (last !== null) args.after_entry_index = last;
    const got = await call("tail_attempt_logs", args);
    if (!got) return;
    for (const e of got.entries) {
      log.append(h("span", {class: "e " + (e.entry_type || e.stream || ""), "data-index": e.entry_index}, e.content));
      last = e.entry_index;
    }
    if (got.entries.length) log.scrollTop = log.scrollHeight;
  }
  // A run that ends changes the worktree and the transcript: reload them.
  let shownState = status.state;
  async function refresh() {
    const s = await call("get_attempt_status", {attempt_id: attemptID});
    if (!s) return;
    showStatus(s);
    if (s.state !== shownState) { shownState = s.state; loadChanges(false); loadTranscript(); }
  }

  // Follow-up.
  const prompt = h("textarea", {id: "follow-prompt"});
  const followForm = h("form", {class: "card", id: "follow-up"}, h("h2", {}, "Follow-up"),
    h("label", {for: "follow-prompt"}, "Message for the agent"), prompt,
    h("div", {class: "row"},
      h("button", {type: "submit", class: "primary", value: "send"}, "Send now"),
      h("button", {type: "button", id: "queue", onclick: () => sendFollowUp("queue")}, "Queue for after the run")));
  followForm.addEventListener("submit", (ev) => { ev.preventDefault(); sendFollowUp("send"); });
  async function sendFollowUp(action) {
    const r = await call("follow_up", {action: action, attempt_id: attemptID, prompt: prompt.value});
    if (r) { prompt.value = ""; clearError(); refresh(); }
  }

  const changes = h("div", {id: "changes"}), diff = h("div", {id: "diff"}), file = h("div", {id: "file"}), transcript = h("div", {id: "transcript"});
  async function loadChanges(force) {
    const c = await call("get_attempt_changes", {attempt_id: attemptID, force: !!force});
    if (!c) return;
    const s = c.summary;
    changes.replaceChildren(h("div", {class: "card"},
      h("p", {}, `${s.file_count} files, +${s.added} −${s.deleted}`),
      c.blocked ? h("div", {class: "alert", role: "status"}, "Guard: " + (c.reason || c.blocked_reason), c.hint ? h("div", {class: "hint"}, c.hint) : null,
        h("button", {type: "button", onclick: () => loadChanges(true)}, "Show anyway")) : null,
      h("table", {}, h("tbody", {}, c.files.map((f) => h("tr", {},
        h("td", {}, h("a", {href: "#", onclick: (ev) => { ev.preventDefault(); loadFile(f.path); }}, f.path)),
        h("td", {}, f.status || ""), h("td", {}, "+" + f.added), h("td", {}, "−" + f.deleted)))))));
  }
  async function loadDiff() {
    const p = await call("get_attempt_patch", {attempt_id: attemptID});
    if (!p) return;
    diff.replaceChildren(p.blocked ? h("p", {}, p.reason || "blocked", p.hint ? " — " + p.hint : "") :
      h("div", {class: "diff mono"}, p.patch.split("\n").map((l) => h("span", {class: l.startsWith("+") ? "add" : l.startsWith("-") ? "del" : l.startsWith("@@") ? "hunk" : ""}, l + "\n"))));
  }
  async function loadFile(path) {
    const f = await call("get_attempt_file", {attempt_id: attemptID, path: path});
    if (!f) return;
    file.replaceChildren(h("div", {class: "card"}, h("h2", {}, path), f.blocked ? h("p", {}, f.hint || "blocked") : h("pre", {class: "diff"}, f.content)));
  }
  async function loadTranscript() {
    const m = await call("tail_session_messages", {attempt_id: attemptID});
    if (!m) return;
    transcript.replaceChildren(...m.messages.map((t) => h("div", {class: "card"},
      h("div", {class: "muted"}, "Turn " + t.turn_index), h("div", {}, h("strong", {}, "Prompt: "), t.prompt),
      t.summary ? h("div", {}, h("strong", {}, "Summary: "), t.summary) : null)));
  }

  page("Attempt " + short(attemptID), info, h("div", {class: "row"}, stop),
    h("h2", {}, "Log"), tabs, log,
    followForm,
    h("details", {open: true, ontoggle: () => {}}, h("summary", {}, "Changes"), changes),
    h("details", {id: "diff-section"}, h("summary", {}, "Diff"), diff), file,
    h("details", {id: "transcript-section"}, h("summary", {}, "Transcript"), transcript));
  document.getElementById("diff-section").addEventListener("toggle", (e) => { if (e.target.open) loadDiff(); });
  await follow();
  loadChanges(false);
  loadTranscript();
  every(1000, follow);
  every(3000, refresh);
}

// ---- review -----------------------------------------------------------------

async function reviewView() {
  const q = await call("review_queue", {});
  if (!q) return page("Review");
  const items = q.tasks.map((t) => {
    const feedback = h("textarea", {id: "feedback-" + t.task_id, "aria-label": "Feedback for " + t.title});
    return h("div", {class: "card review", "data-task": t.task_id},
      h("h2", {}, h("a", {href: "#/task/" + t.task_id}, t.title)),
      t.attempt_id ? h("p", {}, h("a", {href: "#/attempt/" + t.attempt_id}, "attempt " + short(t.attempt_id)), " ", badge(t.state),
        t.changes ? ` ${t.changes.file_count} files, +${t.changes.added} −${t.changes.deleted}` : t.changes_error ? " changes: " + t.changes_error : "") : null,
      h("div", {class: "row"},
        h("button", {class: "primary", type: "button", "data-approve": t.attempt_id, onclick: async () => {
          const r = await call("approve_attempt", {attempt_id: t.attempt_id});
          if (r) { clearError(); reviewView().then(() => notice("Approved and merged: " + t.title)); }
        }}, "Approve")),
      h("label", {for: "feedback-" + t.task_id}, "Request changes"), feedback,
      h("div", {class: "row"}, h("button", {type: "button", "data-request-changes": t.attempt_id, onclick: async () => {
        const r = await call("request_changes", {attempt_id: t.attempt_id, feedback: feedback.value});
        if (r) { clearError(); reviewView().then(() => notice("Feedback sent: " + t.title)); }
      }}, "Request changes")));
  });
  page("Review", items.length ? items : h("p", {class: "muted", id: "review-empty"}, "Nothing waits for review."));
}

function notice(text) { main().prepend(h("div", {class: "notice", role: "status"}, text)); }

// ---- decision log -----------------------------------------------------------

async function decisionsView() {
  const agent = h("input", {id: "f-agent"}), tool = h("input", {id: "f-tool"}), since = h("input", {id: "f-since", type: "datetime-local"});
  const body = h("tbody", {});
  const form = h("form", {class: "row card", id: "decision-filter"},
    h("div", {}, h("label", {for: "f-agent"}, "Agent"), agent),
    h("div", {}, h("label", {for: "f-tool"}, "Tool"), tool),
    h("div", {}, h("label", {for: "f-since"}, "Finished since"), since),
    h("button", {type: "submit"}, "Filter"));
  form.addEventListener("submit", (ev) => { ev.preventDefault(); load(); });
  page("Decision log", form, h("table", {id: "decisions"}, h("thead", {}, h("tr", {}, ["Time", "Agent", "Tool", "Status", "Duration", "Error"].map((c) => h("th", {}, c)))), body));
  async function load() {
    const qs = new URLSearchParams({agent: agent.value, tool: tool.value, limit: "100"});
    // The log's times are UTC with six fraction digits.
    if (since.value) qs.set("since", new Date(since.value).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z"));
    const rows = await operatorRead("decisions?" + qs);
    if (!rows) return;
    body.replaceChildren(...rows.map((d) => h("tr", {},
      h("td", {class: "mono"}, d.created_at || d.CreatedAt), h("td", {}, d.agent_id || d.AgentID || "—"), h("td", {}, d.tool || d.Tool || d.title || d.Title),
      h("td", {}, badge(d.status || d.Status)), h("td", {}, (d.duration_ms ?? d.DurationMS ?? "") + ""), h("td", {}, d.error_code || d.ErrorCode || ""))));
  }
  await load();
  every(2000, load);
}

// ---- inbox ------------------------------------------------------------------

async function inboxView() {
  const inbox = await operatorRead("inbox?include_read=true");
  if (!inbox) return page("Inbox");
  page("Inbox (human)", inbox.mails.length ? inbox.mails.map((m) => {
    const reply = h("textarea", {id: "reply-" + m.mail_id, "aria-label": "Reply to " + m.subject});
    return h("div", {class: "card mail", "data-mail": m.mail_id},
      h("h2", {}, m.subject, " ", m.read_at ? null : badge("unread")),
      h("p", {class: "muted"}, "From " + m.from_agent_id + " · " + m.created_at),
      h("p", {}, m.body),
      m.read_at ? null : h("button", {type: "button", onclick: async () => { if (await operatorRead("inbox/read", {mail_id: m.mail_id})) inboxView(); }}, "Mark read"),
      h("label", {for: "reply-" + m.mail_id}, "Reply"), reply,
      h("div", {class: "row"}, h("button", {type: "button", onclick: async () => {
        if (await operatorRead("inbox/reply", {mail_id: m.mail_id, body: reply.value})) { inboxView().then(() => notice("Reply sent")); }
      }}, "Send reply")));
  }) : h("p", {class: "muted"}, "No mail for the human inbox."));
}

// ---- plugins ----------------------------------------------------------------

async function pluginsView() {
  const p = await operatorRead("plugins");
  if (!p) return page("Plugins");
  page("Plugins",
    p.plugins.map((pl) => h("div", {class: "card plugin", "data-plugin": pl.name},
      h("h2", {}, pl.name + " " + (pl.version || "")),
      h("p", {class: "muted"}, pl.description || ""),
      h("dl", {class: "kv"},
        h("dt", {}, "File"), h("dd", {class: "mono"}, pl.path),
        h("dt", {}, "Compiled"), h("dd", {}, pl.loaded ? "loaded" : pl.compiled ? "compiled (unloaded while idle)" : "not yet"),
        h("dt", {}, "Idle instances"), h("dd", {}, String(pl.idle_instances ?? 0)),
        h("dt", {}, "Capabilities granted"), h("dd", {}, (pl.granted || []).join(", ") || "none"),
        h("dt", {}, "Withheld"), h("dd", {}, (pl.withheld || []).join(", ") || "none")),
      h("details", {}, h("summary", {}, `${pl.tools.length} tools`),
        pl.tools.map((t) => h("div", {class: "card"}, h("strong", {}, t.name), h("pre", {class: "mono"}, t.description),
          h("details", {}, h("summary", {}, "Input schema"), h("pre", {class: "mono"}, JSON.stringify(t.input_schema, null, 2)))))))),
    p.problems.length ? [h("h2", {}, "Problems"), p.problems.map((x) => h("div", {class: "alert"}, x.path + ": " + x.error))] : null);
}

// ---- hosts ------------------------------------------------------------------

// The hosts sharing the board's store, refreshed like the other live views.
async function hostsView() {
  const body = h("tbody", {});
  page("Hosts",
    h("p", {class: "muted"}, "Every host that has served this board's store. A host that is down has its running attempts marked killed by the others."),
    h("div", {class: "wide"}, h("table", {id: "hosts"},
      h("thead", {}, h("tr", {}, ["Host", "State", "Processes", "Last seen", "Running attempts", "Attempt sandbox"].map((c) => h("th", {scope: "col"}, c)))),
      body)));
  async function load() {
    const hosts = await operatorRead("hosts");
    if (!hosts) return;
    body.replaceChildren(...hosts.map((x) => h("tr", {"data-host": x.host_id},
      h("td", {class: "mono"}, x.host_id, x.this ? " (this host)" : ""),
      h("td", {}, badge(x.alive ? "alive" : "down")),
      h("td", {}, String(x.processes)), h("td", {class: "mono"}, x.last_seen || "—"), h("td", {}, String(x.running_attempts)),
      h("td", {class: "sandbox"}, x.sandbox || "—"))));
  }
  await load();
  every(3000, load);
}

// ---- start ------------------------------------------------------------------

window.addEventListener("hashchange", () => { render(); main().focus(); });
document.getElementById("logout").addEventListener("click", async () => {
  await api("logout", {});
  setOwnSession("");
  state.me = null;
  render();
});
render();
