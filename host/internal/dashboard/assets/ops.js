// plugboard dashboard: the operator's views (decision log, human inbox,
// plugins, hosts). Loaded after app.js, whose helpers it uses.
"use strict";

// ---- decision log -----------------------------------------------------------

// OUTCOMES suggests the outcome filter's values: ok, error (any code),
// invoked (still running) and the registered error codes.
const OUTCOMES = ["ok", "error", "invoked", "invalid_argument", "missing_required", "not_found", "conflict", "permission_denied",
  "tool_not_found", "idempotency_conflict", "plugin_timeout", "plugin_failed", "tool_error", "resource_exhausted", "cancelled",
  "unavailable", "internal"];

// The log's rows are filtered by the server (caller, tool, outcome, a range
// of start times); a row opens to what was recorded of its call.
async function decisionsView() {
  const agent = h("input", {id: "f-agent", maxlength: 256}), tool = h("input", {id: "f-tool", maxlength: 256});
  const outcome = h("input", {id: "f-outcome", list: "outcomes", maxlength: 64, placeholder: "any"});
  const since = h("input", {id: "f-since", type: "datetime-local"}), until = h("input", {id: "f-until", type: "datetime-local"});
  const body = h("tbody", {}), detail = h("div", {id: "decision-detail"});
  const form = h("form", {class: "row card", id: "decision-filter"},
    h("div", {}, h("label", {for: "f-agent"}, "Caller"), agent),
    h("div", {}, h("label", {for: "f-tool"}, "Tool"), tool),
    h("div", {}, h("label", {for: "f-outcome"}, "Outcome"), outcome,
      h("datalist", {id: "outcomes"}, OUTCOMES.map((o) => h("option", {value: o})))),
    h("div", {}, h("label", {for: "f-since"}, "Started from"), since),
    h("div", {}, h("label", {for: "f-until"}, "Started before"), until),
    h("button", {type: "submit"}, "Filter"),
    h("button", {type: "button", id: "f-clear", onclick: () => { for (const i of [agent, tool, outcome, since, until]) i.value = ""; clearError(); load(); }}, "Clear"));
  form.addEventListener("submit", (ev) => { ev.preventDefault(); clearError(); load(); });
  page("Decision log", form, detail, h("div", {class: "wide"}, h("table", {id: "decisions"},
    h("thead", {}, h("tr", {}, ["Time", "Caller", "Tool", "Status", "Duration", "Error"].map((c) => h("th", {scope: "col"}, c)))), body)));
  // seq drops the answer of a load a later one overtook (a poll sent before
  // the filter changed); shown skips redrawing rows that did not change,
  // so a click is not lost to a row redrawn under the pointer.
  let seq = 0, shown = "";
  async function load() {
    const qs = new URLSearchParams({limit: "100"});
    for (const [k, el] of [["agent", agent], ["tool", tool], ["outcome", outcome]]) if (el.value.trim()) qs.set(k, el.value.trim());
    for (const [k, el] of [["from", since], ["to", until]]) if (el.value) qs.set(k, new Date(el.value).toISOString());
    const mine = ++seq;
    const rows = await operatorRead("decisions?" + qs);
    if (mine !== seq) return;
    if (!rows) { body.replaceChildren(); shown = ""; return; }
    const text = JSON.stringify(rows);
    if (text === shown) return;
    shown = text;
    body.replaceChildren(...rows.map((d) => h("tr", {"data-decision": d.id},
      h("td", {class: "mono"}, h("button", {type: "button", class: "link", "data-open": d.id, onclick: () => openDecision(d.id)}, d.created_at)),
      h("td", {}, d.agent_id || "—", d.agent_type ? h("span", {class: "muted"}, " " + d.agent_type) : null),
      h("td", {}, d.tool || d.title), h("td", {}, badge(d.status)),
      h("td", {}, d.duration_ms === null || d.duration_ms === undefined ? "" : d.duration_ms + " ms"), h("td", {}, d.error_code || ""))));
  }
  async function openDecision(id) {
    const d = await operatorRead("decision?id=" + encodeURIComponent(id));
    if (!d) return;
    detail.replaceChildren(decisionCard(d, () => detail.replaceChildren()));
    detail.querySelector("h2").focus();
  }
  await load();
  every(2000, load);
}

// decisionCard shows one row whole: who called what with which input (as
// stored: sensitive fields and the plugin's secrets masked), the result or
// the envelope, the HTTP requests the plugin made, and how long it took.
function decisionCard(d, close) {
  const envelope = d.error && typeof d.error === "object" ? d.error : null;
  const http = Array.isArray(d.http) ? d.http : [];
  return h("section", {class: "card decision", "aria-label": "Decision " + d.id},
    h("div", {class: "row"}, h("h2", {tabindex: "-1"}, (d.tool || d.title) + " ", badge(d.status)),
      h("button", {type: "button", id: "close-decision", onclick: close}, "Close")),
    h("dl", {class: "kv"},
      h("dt", {}, "Caller"), h("dd", {id: "d-caller"}, (d.agent_id || "—") + (d.agent_type ? " (" + d.agent_type + ")" : "")),
      h("dt", {}, "Started"), h("dd", {class: "mono"}, d.created_at),
      h("dt", {}, "Finished"), h("dd", {class: "mono"}, d.finished_at || "not yet"),
      h("dt", {}, "Duration"), h("dd", {id: "d-duration"}, d.duration_ms === null || d.duration_ms === undefined ? "—" : d.duration_ms + " ms"),
      h("dt", {}, "Runs"), h("dd", {}, String(d.attempts || 0)),
      d.request_id ? [h("dt", {}, "Request id"), h("dd", {class: "mono"}, d.request_id)] : null,
      h("dt", {}, "Row id"), h("dd", {class: "mono"}, d.id)),
    d.kind === "decision" ? [h("h3", {}, d.title), h("p", {id: "d-body"}, d.body)] : null,
    h("h3", {}, "Input"), payload("d-input", d.input),
    envelope ? [h("h3", {}, "Error"), h("dl", {class: "kv", id: "d-error"},
      h("dt", {}, "Code"), h("dd", {class: "mono"}, envelope.code || d.error_code),
      h("dt", {}, "Message"), h("dd", {}, envelope.message || ""),
      envelope.hint ? [h("dt", {}, "Hint"), h("dd", {}, envelope.hint)] : null,
      h("dt", {}, "Retryable"), h("dd", {}, envelope.retryable ? "yes" : "no"),
      envelope.details ? [h("dt", {}, "Details"), h("dd", {}, payload("d-details", envelope.details))] : null)]
      : [h("h3", {}, "Result"), payload("d-result", d.result,
        d.status === "invoked" ? "Not finished yet." : "No structured result (an answer of text only is not kept).")],
    h("h3", {}, "HTTP requests"),
    http.length ? h("div", {class: "wide"}, h("table", {id: "d-http"},
      h("thead", {}, h("tr", {}, ["Method", "URL", "Status", "Bytes", "Duration", "Error"].map((c) => h("th", {scope: "col"}, c)))),
      h("tbody", {}, http.map((r) => h("tr", {}, h("td", {}, r.method), h("td", {class: "mono"}, r.url), h("td", {}, r.status ? String(r.status) : "—"),
        h("td", {}, String(r.bytes)), h("td", {}, r.duration_ms + " ms"), h("td", {}, r.error || ""))))))
      : h("p", {class: "muted", id: "d-http-none"}, d.http && d.http.truncated ? "" : "None."),
    d.http && d.http.truncated ? payload("d-http-capped", d.http) : null);
}

// payload shows a stored JSON value; one the log capped (longer than its
// payload limit) is shown as its size, hash and first bytes.
function payload(id, v, none) {
  if (v === null || v === undefined) return h("p", {class: "muted", id: id}, none || "—");
  if (typeof v === "object" && v.truncated === true && typeof v.sha256 === "string") {
    return h("div", {id: id}, h("p", {class: "muted"}, `Stored capped: ${v.bytes} bytes, SHA-256 ${v.sha256}. The first bytes:`),
      h("pre", {class: "diff"}, v.prefix));
  }
  return h("pre", {class: "diff", id: id}, JSON.stringify(v, null, 2));
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
      pluginNeeds(pl), pluginSettings(pl),
      h("details", {}, h("summary", {}, `${pl.tools.length} tools`),
        pl.tools.map((t) => h("div", {class: "card"}, h("strong", {}, t.name), h("pre", {class: "mono"}, t.description),
          h("details", {}, h("summary", {}, "Input schema"), h("pre", {class: "mono"}, JSON.stringify(t.input_schema, null, 2)))))))),
    p.problems.length ? [h("h2", {}, "Problems"), p.problems.map((x) => h("div", {class: "alert"}, x.path + ": " + x.error))] : null);
}

// pluginNeeds lists what a plugin declares it needs, each with its status
// under the settings in force; the server sends names and statuses, never a
// value.
function pluginNeeds(pl) {
  const needs = pl.needs || [];
  if (!needs.length) return h("p", {class: "muted needs-none"}, "Declares no needs.");
  const missing = needs.filter((n) => n.status === "missing" || n.status === "not_allowed");
  const unmet = missing.filter((n) => n.kind === "config" && n.required).length;
  const summary = unmet ? "needs configuration" : missing.length ? missing.length + " not given" : "all given";
  return [h("h3", {}, "Needs ", h("span", {class: "badge " + (missing.length ? "need-unmet" : "need-met")}, summary)),
    h("div", {class: "wide"}, h("table", {class: "needs"},
      h("thead", {}, h("tr", {}, ["Need", "What for", "Status", "Setting"].map((c) => h("th", {scope: "col"}, c)))),
      h("tbody", {}, needs.map((n) => h("tr", {"data-need": n.name, "data-status": n.status},
        h("td", {class: "mono"}, n.kind + " " + n.name, n.paths && n.paths.length ? " " + n.paths.join(" ") : ""),
        h("td", {}, n.description || "", n.kind === "config" ? h("span", {class: "muted"}, (n.description ? " · " : "") +
          (n.required ? "required" : "optional") + (n.secret ? ", secret" : "")) : null),
        h("td", {}, h("span", {class: "badge need-" + n.status}, n.status.replace("_", " "))),
        h("td", {class: "mono"}, n.setting))))))];
}

// pluginSettings shows the operator's settings in force for a plugin, by
// name: configuration keys as set or empty, hosts, mounts.
function pluginSettings(pl) {
  const s = pl.settings || {config: [], allowed_hosts: [], mounts: []};
  const keys = s.config.map((c) => c.key + " (" + c.status + (c.secret ? ", secret" : "") + (pl.needs && pl.needs.length && !c.declared ? ", not declared" : "") + ")");
  return [h("h3", {}, "Settings in force"), h("dl", {class: "kv settings"},
    h("dt", {}, "Config"), h("dd", {class: "mono", "data-setting": "config"}, keys.join(", ") || "none"),
    h("dt", {}, "Allowed hosts"), h("dd", {class: "mono", "data-setting": "allowed_hosts"}, s.allowed_hosts.join(", ") || "none: no network"),
    s.allow_private ? [h("dt", {}, "Private addresses"), h("dd", {}, "allowed")] : null,
    h("dt", {}, "Directories"), h("dd", {class: "mono"}, s.mounts.map((m) => m.mount + " ← " + m.path + (m.writable ? " (writable)" : " (read-only)")).join(", ") || "none"),
    s.stateful ? [h("dt", {}, "Stateful"), h("dd", {}, "yes")] : null,
    s.call_timeout ? [h("dt", {}, "Call timeout"), h("dd", {}, s.call_timeout)] : null)];
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

