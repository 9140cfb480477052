// plugboard dashboard: an attempt (its conversation with the agent, its
// live log, and the review of its changes: per-file diffs, line comments
// gathered into the request-changes feedback, approve) and the review
// queue. Uses app.js's helpers and diffview.js (window.PlugboardDiff).
"use strict";

// FILES_PER_PAGE is how many files' diffs one get_attempt_patch asks for:
// a large change is read and drawn a page at a time.
const FILES_PER_PAGE = 10;

async function attemptView(attemptID, r) {
  const status = await call("get_attempt_status", {attempt_id: attemptID});
  if (!status) return page("Attempt");
  let current = status;
  const running = () => current.state === "running";

  // ---- status ----
  const info = h("div", {class: "card", id: "status"});
  function showStatus(s) {
    current = s;
    fill(info, h("dl", {class: "kv"},
      h("dt", {}, "State"), h("dd", {id: "state"}, badge(s.state), s.state === "running" ? [" ", h("span", {class: "pulse", "aria-hidden": "true"})] : null),
      h("dt", {}, "Task"), h("dd", {}, h("a", {href: may("get_task") ? "#/task/" + s.task_id : "#/"}, short(s.task_id)), " ", badge(s.task_status)),
      h("dt", {}, "Executor"), h("dd", {}, s.executor),
      h("dt", {}, "Branch"), h("dd", {class: "mono"}, s.workspace_branch),
      s.last_activity_at ? [h("dt", {}, "Last activity"), h("dd", {}, h("span", {class: "activity", "data-since": s.last_activity_at}, ago(s.last_activity_at)), " ago")] : null,
      s.failure_summary ? [h("dt", {}, "Failure"), h("dd", {}, s.failure_summary)] : null,
      h("dt", {}, "Follow-up queued"), h("dd", {id: "queued"}, s.queued_follow_up && may("follow_up") ? ["yes ",
        h("button", {type: "button", id: "cancel-queued", onclick: async () => {
          if (await call("follow_up", {action: "cancel", attempt_id: attemptID})) { clearError(); refresh(); loadTranscript(); }
        }}, "Cancel it")] : s.queued_follow_up ? "yes" : "no")));
    stop.hidden = s.state !== "running";
  }
  const stop = h("button", {class: "danger", type: "button", id: "stop"}, "Stop");
  stop.addEventListener("click", async () => {
    if (!await confirmDialog("Stop the agent?", "The running process is interrupted, then killed after 5 s. A queued follow-up is dropped.", "Stop")) return;
    const res = await call("stop_attempt", {attempt_id: attemptID});
    if (res) { clearError(); refresh(); }
  });
  const refresh = serial(async () => {
    const s = await call("get_attempt_status", {attempt_id: attemptID});
    if (s) showStatus(s);
  });

  // ---- conversation ----
  // The transcript and the follow-ups as one thread: each turn's prompt
  // (the task, then a follow-up or a reviewer's feedback), the agent's
  // summary, a queued message, and how the last run ended.
  const transcript = h("ol", {class: "thread", id: "transcript", "aria-label": "Conversation"});
  let queuedText = null;
  const loadTranscript = serial(async () => {
    if (!may("tail_session_messages")) return;
    const m = await tryCall("tail_session_messages", {attempt_id: attemptID, limit: 200});
    const msgs = m.result ? m.result.messages : [];
    const items = [];
    msgs.forEach((t, i) => {
      items.push(h("li", {class: "msg you", "data-turn": t.turn_index},
        h("div", {class: "by"}, t.turn_index === 0 ? "Task" : "Follow-up", h("span", {class: "muted"}, " · " + t.created_at)),
        h("div", {class: "text"}, t.prompt)));
      const last = i === msgs.length - 1;
      if (t.summary) items.push(h("li", {class: "msg agent"}, h("div", {class: "by"}, current.executor), h("div", {class: "text"}, t.summary)));
      else if (last && running()) items.push(h("li", {class: "msg agent working"}, h("div", {class: "by"}, current.executor), h("div", {class: "text muted"}, "Working… (the log shows what it does)")));
    });
    if (!msgs.length) items.push(h("li", {class: "msg event muted"}, m.error ? m.error.message : "No turn yet."));
    if (current.state === "failed" && current.failure_summary) items.push(h("li", {class: "msg event", id: "run-ended"}, "Run ended: " + current.failure_summary));
    if (current.queued_follow_up) items.push(h("li", {class: "msg you queued", id: "queued-msg"}, h("div", {class: "by"}, "Queued for after this run"),
      h("div", {class: "text"}, queuedText || "A follow-up is queued.")));
    transcript.replaceChildren(...items);
  });
  const prompt = h("textarea", {id: "follow-prompt", placeholder: "Write to the agent…"});
  const followForm = h("form", {class: "composer", id: "follow-up"},
    h("label", {for: "follow-prompt"}, "Message for the agent"), prompt,
    h("div", {class: "row"},
      h("button", {type: "submit", class: "primary", value: "send"}, "Send now"),
      h("button", {type: "button", id: "queue", onclick: () => sendFollowUp("queue")}, "Queue for after the run"),
      h("span", {class: "muted"}, "Ctrl+Enter sends")));
  followForm.addEventListener("submit", (ev) => { ev.preventDefault(); sendFollowUp("send"); });
  prompt.addEventListener("keydown", (ev) => { if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); sendFollowUp(running() ? "queue" : "send"); } });
  async function sendFollowUp(action) {
    const text = prompt.value;
    const res = await call("follow_up", {action: action, attempt_id: attemptID, prompt: text});
    if (res) {
      prompt.value = "";
      if (action === "queue") queuedText = text;
      clearError();
      await refresh();
      loadTranscript();
    }
  }

  // ---- log ----
  let channel = "normalized", last = null, processID = null;
  const log = h("div", {class: "log mono", id: "log", role: "log", "aria-live": "polite", tabindex: "0", "aria-label": "Log"});
  const tabs = h("div", {class: "tabs", role: "tablist", "aria-label": "Log channel"},
    ["normalized", "raw"].map((c) => h("button", {type: "button", role: "tab", "aria-selected": c === channel ? "true" : "false", "data-channel": c,
      onclick: () => {
        channel = c; last = null; processID = null; log.replaceChildren();
        for (const b of tabs.children) b.setAttribute("aria-selected", b.dataset.channel === c ? "true" : "false");
        follow();
      }}, c)));
  // follow appends what follows the last line shown; a new process (a
  // follow-up's run) starts its own numbering, so the log restarts under
  // a separator.
  const follow = serial(async () => {
    for (let pages = 0; pages < 20; pages++) {
      const args = {attempt_id: attemptID, channel: channel, limit: 500};
      if (last !== null) args.after_entry_index = last;
      const got = await tryCall("tail_attempt_logs", args);
      if (got.error) { if (got.error.code !== "not_found") showError(got.error); return; }
      const res = got.result;
      if (res.execution_process_id && processID && res.execution_process_id !== processID && last !== null) {
        processID = res.execution_process_id;
        last = null;
        log.append(h("span", {class: "e sep"}, "— a new run —"));
        continue;
      }
      processID = res.execution_process_id || processID;
      const stick = log.scrollTop + log.clientHeight >= log.scrollHeight - 24;
      for (const e of res.entries) {
        log.append(h("span", {class: "e " + (e.entry_type || e.stream || ""), "data-index": e.entry_index}, e.content));
        last = e.entry_index;
      }
      if (res.entries.length && stick) log.scrollTop = log.scrollHeight;
      if (res.entries.length < 500) return;
    }
  });

  // ---- review ----
  const comments = [];
  const changes = h("div", {id: "changes"});
  const diff = h("div", {id: "diff"});
  const commentCount = h("span", {id: "comment-count", class: "muted", role: "status"});
  let mode = "unified", files = [], shownFiles = 0, forced = false;
  const summary = h("textarea", {id: "review-summary", placeholder: "Overall feedback (optional)"});
  const countComments = () => { commentCount.textContent = comments.length === 1 ? "1 line comment" : comments.length + " line comments"; };
  countComments();
  const reviewBar = h("div", {class: "card review-bar", id: "review-bar"},
    h("label", {for: "review-summary"}, "Feedback for the agent (line comments are added to it)"), summary,
    h("div", {class: "row"},
      may("request_changes") ? h("button", {type: "button", id: "review-request-changes", onclick: async () => {
        const text = window.PlugboardDiff.feedback(comments, summary.value.trim());
        if (!text.trim()) return showError({message: "no feedback yet", hint: "comment on a line of the diff or write the overall feedback"});
        const res = await call("request_changes", {attempt_id: attemptID, feedback: text});
        if (res) {
          comments.length = 0; summary.value = ""; countComments(); clearError();
          notice(res.action === "send" ? "Feedback sent: the agent runs again." : "Feedback queued: it runs when the current run completes.");
          queuedText = res.action === "queue" ? text : null;
          await refresh(); loadTranscript(); loadDiff(true);
        }
      }}, "Request changes") : null,
      may("approve_attempt") ? h("button", {type: "button", class: "primary", id: "review-approve", onclick: async () => {
        const res = await call("approve_attempt", {attempt_id: attemptID});
        if (res) { clearError(); notice((res.merged ? "Approved and merged" : "Approved, nothing merged") + (res.summary ? ": " + res.summary : "")); refresh(); }
      }}, "Approve") : null,
      commentCount));
  const modeButtons = h("div", {class: "tabs", role: "group", "aria-label": "Diff layout"},
    ["unified", "split"].map((m) => h("button", {type: "button", "aria-pressed": m === mode ? "true" : "false", "data-mode": m, onclick: () => {
      mode = m;
      for (const b of modeButtons.children) b.setAttribute("aria-pressed", b.dataset.mode === m ? "true" : "false");
      redrawDiff();
    }}, m)));

  const loadChanges = serial(async () => {
    const c = await tryCall("get_attempt_changes", {attempt_id: attemptID, force: forced});
    if (c.error) { changes.replaceChildren(h("p", {class: "muted"}, c.error.message)); return; }
    const res = c.result, s = res.summary;
    files = res.files || [];
    fill(changes, ...[
      h("p", {}, `${s.file_count} files, +${s.added} −${s.deleted}`),
      res.blocked ? h("div", {class: "alert", role: "status"}, "Guard: " + (res.reason || res.blocked_reason), res.hint ? h("div", {class: "hint"}, res.hint) : null,
        h("button", {type: "button", id: "show-anyway", onclick: () => { forced = true; loadChanges().then(() => loadDiff(true)); }}, "Show anyway")) : null,
      files.length ? h("div", {class: "wide"}, h("table", {id: "files"},
        h("thead", {}, h("tr", {}, ["File", "Status", "Added", "Deleted"].map((x) => h("th", {scope: "col"}, x)))),
        h("tbody", {}, files.map((f) => h("tr", {},
          h("td", {}, h("a", {href: "#", class: "mono", onclick: (ev) => { ev.preventDefault(); jumpTo(f.path); }}, f.path)),
          h("td", {}, f.status || ""), h("td", {}, "+" + f.added), h("td", {}, "−" + f.deleted)))))) : null,
      res.outside && res.outside.count ? h("p", {class: "muted"}, `${res.outside.count} files outside any repository (not merged).`) : null,
    ].filter(Boolean));
  });
  // loadDiff reads the patch of the first page of files (again, when
  // fresh); more pages follow on demand.
  let patches = [];
  const loadDiff = serial(async (fresh) => {
    if (fresh !== false) { patches = []; shownFiles = 0; diff.replaceChildren(); }
    if (!files.length) { diff.replaceChildren(h("p", {class: "muted"}, "No change to review.")); return; }
    await morePatches();
  });
  async function morePatches() {
    const pagePaths = files.slice(shownFiles, shownFiles + FILES_PER_PAGE).map((f) => f.path);
    if (!pagePaths.length) return;
    const p = await tryCall("get_attempt_patch", {attempt_id: attemptID, paths: pagePaths});
    if (p.error) { diff.append(h("p", {class: "alert"}, p.error.message, p.error.hint ? " — " + p.error.hint : "")); return; }
    if (p.result.blocked) { diff.append(h("p", {class: "alert"}, p.result.reason || "blocked", p.result.hint ? " — " + p.result.hint : "")); return; }
    patches.push({paths: pagePaths, parsed: window.PlugboardDiff.parse(p.result.patch), truncated: p.result.truncated, hint: p.result.hint});
    shownFiles += pagePaths.length;
    redrawDiff();
  }
  function redrawDiff() {
    const out = [];
    for (const pg of patches) {
      for (const f of pg.parsed) out.push(window.PlugboardDiff.render(f, {mode: mode, comments: comments, onChange: countComments, readOnly: !may("request_changes")}));
      if (pg.truncated) {
        out.push(h("div", {class: "alert"}, "This page of the diff was cut at its size limit. ", pg.hint || "",
          h("button", {type: "button", onclick: async () => {
            const more = await call("get_attempt_patch", {attempt_id: attemptID, paths: pg.paths, max_bytes: 1048576});
            if (more && !more.blocked) { pg.parsed = window.PlugboardDiff.parse(more.patch); pg.truncated = more.truncated; pg.hint = more.hint; redrawDiff(); }
          }}, "Load up to 1 MiB")));
      }
    }
    if (shownFiles < files.length) {
      out.push(h("button", {type: "button", id: "more-files", onclick: morePatches}, `Show the next files (${files.length - shownFiles} left)`));
    }
    diff.replaceChildren(...out);
  }
  function jumpTo(path) {
    const el = [...diff.querySelectorAll("section.pd-file")].find((s) => s.dataset.path === path);
    if (el) { el.scrollIntoView({block: "start"}); el.querySelector("button, a, [tabindex]")?.focus(); return; }
    notice("That file's diff is further down: press \"Show the next files\".");
  }

  const reviewing = may("get_attempt_changes");
  // The status, conversation, log and file list are read before the page
  // is drawn, so its controls do not move once shown; the diffs, at the
  // bottom, follow.
  showStatus(status);
  await Promise.all([follow(), loadTranscript(), reviewing ? loadChanges() : null]);
  page("Attempt " + short(attemptID),
    h("div", {class: "row between"}, may("get_task") ? h("a", {href: "#/task/" + status.task_id}, "← Task") : h("a", {href: "#/"}, "← My work"),
      h("span", {id: "live", class: "live", hidden: true})),
    info, may("stop_attempt") ? h("div", {class: "row"}, stop) : null,
    h("div", {class: "split-2"},
      h("section", {class: "card", "aria-labelledby": "conv-title", id: "conversation"}, h("h2", {id: "conv-title"}, "Conversation"), transcript,
        may("follow_up") ? followForm : null),
      h("section", {class: "card", "aria-labelledby": "log-title"}, h("h2", {id: "log-title"}, "Log"), tabs, log)),
    reviewing ? h("section", {id: "review", "aria-labelledby": "review-title"},
      h("h2", {id: "review-title"}, "Review the changes"), h("div", {class: "card"}, changes),
      h("div", {class: "row between"}, modeButtons, h("span", {class: "muted"}, "Comment on a line: its number's + button")), diff,
      may("request_changes") || may("approve_attempt") ? reviewBar : null) : null);
  if (reviewing) await loadDiff(true);
  if (r && r.rest[0] === "review") document.getElementById("review")?.scrollIntoView();

  let shownState = status.state;
  watch({attempt: attemptID}, async (kind, data) => {
    const what = kind === "ready" ? ["logs", "state", "messages", "changes"] : data.what || [];
    if (what.includes("logs")) follow();
    if (what.includes("state") || what.includes("messages")) { await refresh(); loadTranscript(); }
    if (reviewing && (what.includes("changes") || current.state !== shownState)) {
      shownState = current.state;
      const before = JSON.stringify(files);
      await loadChanges();
      if (JSON.stringify(files) === before) return;
      // A reviewer's comments in progress are kept: the diff is redrawn
      // from the new patch only when none are pending.
      if (!comments.length && !diff.querySelector("textarea")) loadDiff(true);
      else if (!document.getElementById("diff-stale")) diff.prepend(h("div", {class: "notice", id: "diff-stale"}, "The worktree changed since this diff was read. ",
        h("button", {type: "button", onclick: () => loadDiff(true)}, "Reload the diff")));
    }
  });
  every(1000, tickClocks);
}

// ---- review queue -----------------------------------------------------------

async function reviewView() {
  const q = await call("review_queue", {});
  if (!q) return page("Review");
  const items = q.tasks.map((t) => {
    const feedback = h("textarea", {id: "feedback-" + t.task_id, "aria-label": "Feedback for " + t.title});
    return h("div", {class: "card review", "data-task": t.task_id},
      h("h2", {}, h("a", {href: "#/task/" + t.task_id}, t.title)),
      t.attempt_id ? h("p", {}, h("a", {href: "#/attempt/" + t.attempt_id}, "attempt " + short(t.attempt_id)), " ", badge(t.state),
        t.changes ? ` ${t.changes.file_count} files, +${t.changes.added} −${t.changes.deleted}` : t.changes_error ? " changes: " + t.changes_error : "",
        " ", h("a", {href: "#/attempt/" + t.attempt_id + "/review", class: "review-link"}, "Review the diff")) : null,
      h("div", {class: "row"},
        h("button", {class: "primary", type: "button", "data-approve": t.attempt_id, onclick: async () => {
          const res = await call("approve_attempt", {attempt_id: t.attempt_id});
          // The answer says what was merged, per repo, and what was not: never "merged" when nothing was.
          const said = (res && res.merged ? "Approved and merged: " : "Approved, nothing merged: ") + t.title +
            (res && res.summary ? " (" + res.summary + ")" : "") + (res && res.warnings && res.warnings.length ? ". " + res.warnings.join(" ") : "");
          if (res) { clearError(); reviewView().then(() => notice(said)); }
        }}, "Approve")),
      h("label", {for: "feedback-" + t.task_id}, "Request changes"), feedback,
      h("div", {class: "row"}, h("button", {type: "button", "data-request-changes": t.attempt_id, onclick: async () => {
        const res = await call("request_changes", {attempt_id: t.attempt_id, feedback: feedback.value});
        if (res) { clearError(); reviewView().then(() => notice("Feedback sent: " + t.title)); }
      }}, "Request changes")));
  });
  page("Review", items.length ? items : h("p", {class: "muted", id: "review-empty"}, "Nothing waits for review."));
}
