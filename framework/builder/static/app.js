// manifest-builder's page: plain JavaScript, no build step, no library, nothing fetched from the internet.
// It speaks the JSON API of framework/builder (see docs/builder.md): session, validate, test-read (polled),
// infer, accept-schema and save. The server keeps the config's secrets; the page only ever sees "********".
"use strict";

const VALIDATE_DELAY_MS = 400;  // debounce: validate once typing pauses
const POLL_MS = 300;            // a running test read is polled this often

const state = {
  version: null,          // hash of the manifest file as opened or last saved (the save's conflict check)
  savedText: "",          // the manifest text as on disk, for the "unsaved changes" mark
  schemaFiles: {},        // schema files accepted but not written yet: written by the save
  streams: [],            // [{name, partitioned}] from the last validation
  validateTimer: null,
  validateSeq: 0,         // answers of older validations are dropped
  run: null,              // {id, stream} of the last test read
  pollTimer: null,
  inferred: null,         // the last /api/infer answer, with its stream
};

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

async function api(method, path, body) {
  const options = {method, headers: {}};
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, options);
  } catch (error) {
    throw Object.assign(new Error(`the builder's server does not answer (${error.message}): is manifest-builder still running?`), {status: 0});
  }
  let data = null;
  try {
    data = await response.json();
  } catch (error) {
    data = null;
  }
  if (!response.ok) {
    const message = data && data.error ? data.error : `${method} ${path} answered ${response.status}`;
    throw Object.assign(new Error(message), {status: response.status, data});
  }
  return data;
}

function say(text, kind) {
  const message = $("message");
  message.textContent = text;
  message.className = "message" + (kind ? " " + kind : "");
}

// ---- editors: a textarea with a line-number gutter whose rows carry the problems of their line ----

function lineCount(text) {
  let count = 1;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) count++;
  return count;
}

function drawGutter(gutter, textarea, diagnostics) {
  // rows are added or removed as the line count changes (a keystroke costs no more than that); the marks
  // are redrawn only when new diagnostics come (until then they stay on the rows they were on)
  const rows = lineCount(textarea.value);
  let count = gutter.childElementCount;
  if (count < rows) {
    const fragment = document.createDocumentFragment();
    while (count < rows) {
      count++;
      fragment.append(el("div", {"data-line": String(count)}, String(count)));
    }
    gutter.append(fragment);
  }
  while (count > rows) {
    gutter.lastElementChild.remove();
    count--;
  }
  if (diagnostics !== undefined) {
    for (const row of gutter.querySelectorAll("div.error, div.warning")) {
      row.className = "";
      row.removeAttribute("title");
    }
    const byLine = new Map();
    for (const d of diagnostics) {
      if (!d.line) continue;
      const had = byLine.get(d.line);
      if (!had || (had.severity !== "error" && d.severity === "error")) byLine.set(d.line, d);
    }
    for (const [line, problem] of byLine) {
      const row = gutter.children[Math.min(line, rows) - 1];  // past the end (a file cut short): the last row
      if (!row) continue;
      row.className = problem.severity === "error" ? "error" : "warning";
      row.title = problem.message + (problem.fix ? "\nfix: " + problem.fix : "");
    }
  }
  gutter.scrollTop = textarea.scrollTop;
}

function jumpTo(textarea, line, column) {
  const lines = textarea.value.split("\n");
  let offset = 0;
  for (let i = 0; i < Math.min(line - 1, lines.length); i++) offset += lines[i].length + 1;
  offset += Math.max(0, (column || 1) - 1);
  textarea.focus();
  textarea.setSelectionRange(offset, offset);
  const rowHeight = parseFloat(getComputedStyle(textarea).lineHeight) || 18;
  textarea.scrollTop = Math.max(0, (line - 3) * rowHeight);
}

function drawProblems(list, textarea, diagnostics, noneText) {
  list.replaceChildren();
  if (!diagnostics.length) {
    list.append(el("li", {class: "none"}, noneText));
    return;
  }
  for (const d of diagnostics) {
    const where = d.line ? `line ${d.line}${d.column ? ":" + d.column : ""}` : (d.path || "");
    const item = el("li", {class: d.severity === "error" ? "error" : "warning", "data-line": String(d.line || "")},
      el("span", {class: "where"}, where),
      el("span", {class: "text"}, `${d.severity}: ${d.message}`),
      d.code ? el("span", {class: "muted"}, ` [${d.code}]`) : null,
      d.fix ? el("span", {class: "fix"}, "fix: " + d.fix) : null);
    if (d.line) item.addEventListener("click", () => jumpTo(textarea, d.line, d.column));
    list.append(item);
  }
}

// ---- validation, debounced as you type ----

let lastDiagnostics = [];
let lastConfigDiagnostics = [];

function scheduleValidate() {
  clearTimeout(state.validateTimer);
  $("validation-status").textContent = "checking…";
  state.validateTimer = setTimeout(validate, VALIDATE_DELAY_MS);
}

async function validate() {
  const seq = ++state.validateSeq;
  const body = {manifest_text: $("manifest").value, config_text: $("config").value};
  let answer;
  try {
    answer = await api("POST", "/api/validate", body);
  } catch (error) {
    if (seq === state.validateSeq) {
      $("validation-status").textContent = "";
      say(error.message, "error");
    }
    return;
  }
  if (seq !== state.validateSeq) return;  // the text changed again meanwhile
  if (answer.config_text && $("config").value === body.config_text && document.activeElement !== $("config")) {
    // a secret was on the screen (typed in, or a field the spec now marks secret): shown masked from now on;
    // the server keeps the value and puts it back where the page sends the placeholder. Not while the config
    // is being edited (a secret half typed would be masked): leaving the editor checks it again.
    $("config").value = answer.config_text;
  }
  lastDiagnostics = answer.diagnostics || [];
  lastConfigDiagnostics = answer.config_diagnostics || [];
  const errors = lastDiagnostics.filter((d) => d.severity === "error").length;
  const warnings = lastDiagnostics.length - errors;
  $("validation-status").textContent = errors || warnings
    ? `${errors} error(s), ${warnings} warning(s)` : "valid";
  $("manifest-editor").dataset.valid = errors ? "false" : "true";
  drawGutter($("gutter"), $("manifest"), lastDiagnostics);
  drawProblems($("problems"), $("manifest"), lastDiagnostics, "No problems found.");
  drawGutter($("config-gutter"), $("config"), lastConfigDiagnostics);
  drawProblems($("config-problems"), $("config"), lastConfigDiagnostics, "The config fits the spec.");
  setStreams(answer.streams || []);
}

function setStreams(streams) {
  state.streams = streams;
  const select = $("stream");
  // the stream chosen last is kept while the manifest is invalid (no streams) and chosen again once it is back
  const chosen = select.value || select.dataset.chosen || "";
  if (select.value) select.dataset.chosen = select.value;
  select.replaceChildren(...streams.map((s) => el("option", {value: s.name}, s.name + (s.partitioned ? " (partitioned)" : ""))));
  if (streams.some((s) => s.name === chosen)) select.value = chosen;
  updatePartition();
  $("test").disabled = !streams.length || isRunning();
}

function updatePartition() {
  const stream = state.streams.find((s) => s.name === $("stream").value);
  $("partition-label").hidden = !(stream && stream.partitioned);
}

function markDirty() {
  const dirty = $("manifest").value !== state.savedText || Object.keys(state.schemaFiles).length > 0;
  $("dirty").hidden = !dirty;
}

// ---- test read ----

function isRunning() {
  return state.pollTimer !== null;
}

async function startTest(event) {
  event.preventDefault();
  const stream = $("stream").value;
  if (!stream) return;
  const entry = state.streams.find((s) => s.name === stream);
  const partition = entry && entry.partitioned ? Number($("partition").value || 0) : null;
  const pages = Math.max(1, Number($("pages").value || 1));
  $("results").replaceChildren();
  $("warnings").replaceChildren();
  $("schema-diff").replaceChildren();
  $("schema-added").textContent = "";
  $("schema-target").textContent = "";
  $("accept").disabled = true;
  $("infer").disabled = true;
  state.inferred = null;
  setRunStatus("starting…", "running");
  let answer;
  try {
    answer = await api("POST", "/api/test-read", {
      manifest_text: $("manifest").value, config_text: $("config").value, stream, partition, pages});
  } catch (error) {
    setRunStatus("not started: " + error.message, "failed");
    return;
  }
  state.run = {id: answer.run_id, stream};
  $("test").disabled = true;
  $("stop").disabled = false;
  poll();
}

function poll() {
  state.pollTimer = setTimeout(async () => {
    let run;
    try {
      run = await api("GET", `/api/test-read/${encodeURIComponent(state.run.id)}`);
    } catch (error) {
      finishRun();
      setRunStatus("lost the test read: " + error.message, "failed");
      return;
    }
    drawRun(run);
    if (run.status === "running") poll();
    else finishRun();
  }, POLL_MS);
}

function finishRun() {
  clearTimeout(state.pollTimer);
  state.pollTimer = null;
  $("stop").disabled = true;
  $("test").disabled = !state.streams.length;
  $("infer").disabled = !state.run;
}

async function stopTest() {
  if (!state.run) return;
  $("stop").disabled = true;
  try {
    await api("POST", `/api/test-read/${encodeURIComponent(state.run.id)}/stop`, {});
  } catch (error) {
    say(error.message, "error");
  }
}

function setRunStatus(text, status) {
  const node = $("run-status");
  node.textContent = text;
  node.className = "run-status " + status;
  node.dataset.status = status;
}

function pretty(body) {
  if (body === null || body === undefined || body === "") return "(no body)";
  return typeof body === "string" ? body : JSON.stringify(body, null, 2);
}

function headerText(headers) {
  if (!headers) return "";
  const entries = Array.isArray(headers) ? headers : Object.entries(headers);
  return entries.map(([name, value]) => `${name}: ${value}`).join("\n");
}

function drawExchange(exchange, index) {
  const request = exchange.request || {};
  const response = exchange.response || {};
  const status = response.status === null || response.status === undefined ? 0 : response.status;
  const box = el("section", {class: "exchange"},
    el("h3", {}, `Request ${index + 1} `,
      el("span", {class: "status-" + String(status)[0]}, status ? `→ ${status}` : "→ failed")),
    el("div", {class: "request-line"}, `${request.method || ""} ${request.url || ""}`));
  const requestDetails = el("details", {class: "request"}, el("summary", {}, "request headers and body"),
    el("pre", {class: "headers"}, headerText(request.headers) || "(no headers)"),
    request.body ? el("pre", {class: "body"}, pretty(request.body)) : null);
  const responseDetails = el("details", {class: "response", open: ""}, el("summary", {}, "response"),
    el("pre", {class: "headers"}, headerText(response.headers) || "(no headers)"),
    el("pre", {class: "body"}, pretty(response.body)),
    response.truncated ? el("div", {class: "truncated"}, "The body is cut here: it is larger than the builder shows.") : null);
  box.append(requestDetails, responseDetails);
  return box;
}

function drawRecords(records) {
  if (!records.length) return el("p", {class: "muted"}, "No records on this page.");
  const columns = [];
  for (const record of records.slice(0, 200)) {
    for (const key of Object.keys(record || {})) if (!columns.includes(key)) columns.push(key);
  }
  const cell = (value) => {
    const text = value === null || value === undefined ? "" : typeof value === "object" ? JSON.stringify(value) : String(value);
    return el("td", {title: text}, text);
  };
  const table = el("table", {class: "records"},
    el("thead", {}, el("tr", {}, ...columns.map((c) => el("th", {}, c)))),
    el("tbody", {}, ...records.map((r) => el("tr", {}, ...columns.map((c) => cell(r ? r[c] : null))))));
  return table;
}

function drawRun(run) {
  const pages = run.pages || [];
  const records = pages.reduce((n, p) => n + (p.records || []).length, 0);
  const unit = run.unit ? ` — ${run.unit}` : "";
  const partitions = run.partitions ? ` (${run.partitions} partition(s))` : "";
  const words = {running: "running", done: "done", failed: "failed", stopped: "stopped"};
  setRunStatus(`${words[run.status] || run.status}: ${pages.length} page(s), ${records} record(s)${unit}${partitions}`
    + (run.error ? ` — ${run.error}` : ""), run.status);
  $("warnings").replaceChildren(...(run.warnings || []).map((w) =>
    el("li", {}, w.message, w.fix ? el("span", {class: "fix"}, "fix: " + w.fix) : null)));
  const open = new Set([...document.querySelectorAll(".page[open]")].map((p) => p.dataset.number));
  $("results").replaceChildren(...pages.map((page, i) => {
    const box = el("details", {class: "page", "data-number": String(page.number)},
      el("summary", {}, `Page ${page.number}: ${(page.records || []).length} record(s), ${(page.exchanges || []).length} request(s)`));
    if (open.has(String(page.number)) || (!open.size && i === 0)) box.open = true;
    box.append(el("section", {class: "exchanges"}, ...(page.exchanges || []).map(drawExchange)));
    box.append(el("section", {class: "records-box"}, el("h3", {}, "Records"), drawRecords(page.records || [])));
    box.append(el("section", {class: "state"}, el("h3", {}, "State after this page"),
      el("pre", {}, page.state === null || page.state === undefined ? "(none: the stream keeps no state)" : JSON.stringify(page.state, null, 2))));
    return box;
  }));
}

// ---- schema: infer from the last test read, show the diff, accept into the manifest ----

function drawDiff(diff) {
  const pre = $("schema-diff");
  pre.replaceChildren();
  if (!diff) {
    pre.append("The declared schema already covers every record read.");
    return;
  }
  for (const line of diff.split("\n")) {
    let kind = "";
    if (line.startsWith("+++") || line.startsWith("---")) kind = "file";
    else if (line.startsWith("+")) kind = "add";
    else if (line.startsWith("-")) kind = "del";
    else if (line.startsWith("@@")) kind = "hunk";
    pre.append(el("span", {class: kind}, line), kind === "add" || kind === "del" || kind === "hunk" ? "" : "\n");
  }
}

async function infer() {
  if (!state.run) return;
  $("infer").disabled = true;
  try {
    const answer = await api("POST", "/api/infer", {
      manifest_text: $("manifest").value, config_text: $("config").value, stream: state.run.stream, run_id: state.run.id});
    state.inferred = Object.assign({stream: state.run.stream}, answer);
    drawDiff(answer.diff);
    $("schema-added").textContent = answer.added && answer.added.length
      ? "New fields: " + answer.added.join(", ") : "No new fields.";
    const target = answer.target || {};
    $("schema-target").textContent = target.kind === "file" ? `goes to ${target.file}`
      : target.kind === "inline" ? "goes into the manifest's inline schema" : (target.note || "");
    $("accept").disabled = target.kind === "none" || !answer.diff;
    $("schema-diff").scrollIntoView({block: "nearest"});
  } catch (error) {
    say("infer: " + error.message, "error");
  } finally {
    $("infer").disabled = !state.run;
  }
}

async function accept() {
  const inferred = state.inferred;
  if (!inferred) return;
  $("accept").disabled = true;
  try {
    const answer = await api("POST", "/api/accept-schema", {
      manifest_text: $("manifest").value, stream: inferred.stream, schema: inferred.merged});
    if (answer.pending && answer.schema_file) {
      state.schemaFiles[answer.schema_file] = inferred.merged;
      say(`Schema of ${inferred.stream} accepted: ${answer.schema_file} is written on save.`, "ok");
    } else {
      say(`Schema of ${inferred.stream} accepted into the manifest.`, "ok");
    }
    setManifest(answer.manifest_text);
    $("schema-diff").replaceChildren("Accepted.");
    $("schema-added").textContent = "";
  } catch (error) {
    $("accept").disabled = false;
    say("accept: " + error.message, "error");
  }
}

function setManifest(text) {
  const textarea = $("manifest");
  const top = textarea.scrollTop;
  textarea.value = text;
  textarea.scrollTop = top;
  markDirty();
  drawGutter($("gutter"), textarea, []);
  scheduleValidate();
}

// ---- save ----

async function save() {
  $("save").disabled = true;
  try {
    const answer = await api("POST", "/api/save", {
      manifest_text: $("manifest").value, version: state.version, schema_files: state.schemaFiles});
    state.version = answer.version;
    state.savedText = $("manifest").value;
    state.schemaFiles = {};
    markDirty();
    say("Saved (the previous file is kept as .bak).", "ok");
  } catch (error) {
    if (error.status === 409) {
      say("Not saved: " + error.message + " Copy your changes, reload the page to see the file as it is now, and apply them again.", "conflict");
    } else {
      say("Not saved: " + error.message, "error");
    }
  } finally {
    $("save").disabled = false;
  }
}

// ---- wiring ----

function wireEditor(textarea, gutter) {
  textarea.addEventListener("scroll", () => { gutter.scrollTop = textarea.scrollTop; });
  textarea.addEventListener("keydown", (event) => {
    if (event.key === "Tab" && !event.ctrlKey && !event.altKey && !event.metaKey) {
      event.preventDefault();  // YAML has no tabs: two spaces
      const {selectionStart: start, selectionEnd: end} = textarea;
      textarea.setRangeText("  ", start, end, "end");
      textarea.dispatchEvent(new Event("input"));
    }
  });
  textarea.addEventListener("input", () => {
    drawGutter(gutter, textarea);  // rows follow the text at once; the marks stay until it is checked again
    scheduleValidate();
  });
}

async function start() {
  wireEditor($("manifest"), $("gutter"));
  wireEditor($("config"), $("config-gutter"));
  $("manifest").addEventListener("input", markDirty);
  $("config").addEventListener("blur", scheduleValidate);
  $("stream").addEventListener("change", () => {
    $("stream").dataset.chosen = $("stream").value;
    updatePartition();
  });
  $("test-form").addEventListener("submit", startTest);
  $("stop").addEventListener("click", stopTest);
  $("infer").addEventListener("click", infer);
  $("accept").addEventListener("click", accept);
  $("save").addEventListener("click", save);
  document.addEventListener("keydown", (event) => {
    if ((event.ctrlKey || event.metaKey) && event.key === "s") {
      event.preventDefault();
      save();
    }
  });
  window.addEventListener("beforeunload", (event) => {
    if (!$("dirty").hidden) event.preventDefault();
  });
  let session;
  try {
    session = await api("GET", "/api/session");
  } catch (error) {
    say(error.message, "error");
    return;
  }
  state.version = session.version;
  state.savedText = session.manifest_text || "";
  $("manifest-path").textContent = session.manifest_path;
  document.title = `manifest-builder — ${session.manifest_path}`;
  $("manifest").value = state.savedText;
  $("config").value = session.config_text || "";
  drawGutter($("gutter"), $("manifest"), []);
  drawGutter($("config-gutter"), $("config"), []);
  markDirty();
  document.body.dataset.ready = "true";
  validate();
}

start();
