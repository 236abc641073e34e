// The page: wires the conversation list, the open conversation and the composer together.

import * as api from "./api.js";
import { previewKind, preview, renderArtifacts } from "./artifacts.js";
import { Conversation } from "./conversation.js";
import { renderMessages } from "./messages.js";
import { Sidebar } from "./sidebar.js";
import { renderTasks } from "./tasks.js";

const $ = (id) => document.getElementById(id);
const ui = {
  app: $("app"), sidebar: $("sidebar"), toggle: $("toggle-sidebar"), newChat: $("new-chat"),
  title: $("thread-title"), status: $("run-status"), remove: $("delete-thread"), notice: $("notice"),
  scroller: $("scroller"), messages: $("messages"), todos: $("todos"), todoList: $("todo-list"),
  tasks: $("tasks"), taskList: $("task-list"), clarification: $("clarification"),
  question: $("clarification-question"), context: $("clarification-context"),
  options: $("clarification-options"), answerForm: $("clarification-form"), answer: $("clarification-answer"),
  artifacts: $("artifacts"), artifactList: $("artifact-list"), composer: $("composer"),
  prompt: $("prompt"), model: $("model-select"), plan: $("plan-mode"), thinking: $("thinking"),
  fileInput: $("file-input"), attachments: $("attachments"), dropHint: $("drop-hint"),
  send: $("send"), stop: $("stop"), preview: $("preview"), previewTitle: $("preview-title"),
  previewBody: $("preview-body"), previewDownload: $("preview-download"), previewClose: $("preview-close"),
  signin: $("signin"), signinForm: $("signin-form"), signinError: $("signin-error"),
};

const state = {
  conversation: null,
  models: [],
  attachments: [], // {name, status: "uploading" | "done" | "failed", detail}
  wasRunning: false,
  frame: null,
  notice: null,
};

const sidebar = new Sidebar({
  list: $("thread-list"), search: $("thread-search"), more: $("more-threads"),
  empty: $("thread-list-empty"), onOpen: () => closeSidebar(),
});

// -- rendering ----------------------------------------------------------------------------

function scheduleRender() {
  if (state.frame === null) state.frame = requestAnimationFrame(render);
}

function render() {
  state.frame = null;
  const conv = state.conversation;
  const nearBottom = ui.scroller.scrollHeight - ui.scroller.scrollTop - ui.scroller.clientHeight < 80;
  const values = conv?.values ?? {};
  ui.title.textContent = values.title || "New chat";
  document.title = values.title ? `${values.title} · fawn` : "fawn";
  renderStatus(conv);
  ui.remove.hidden = !conv;
  const notice = state.notice ?? conv?.error ?? (conv?.status === "error" ? conv.threadError ?? "The last run failed." : null);
  ui.notice.hidden = !notice;
  ui.notice.textContent = notice ?? "";
  renderMessages(ui.messages, conv ? conv.messages : [], { streamingIds: conv?.streamingIds });
  renderTodos(values.todos ?? []);
  renderSubagents(conv);
  renderClarification(conv);
  const artifacts = Array.isArray(values.artifacts) ? values.artifacts : [];
  ui.artifacts.hidden = !conv || artifacts.length === 0;
  if (conv) renderArtifacts(ui.artifactList, conv.threadId, artifacts, openPreview);
  const running = Boolean(conv?.running);
  ui.send.disabled = running;
  ui.stop.hidden = !running;
  renderAttachments();
  if (nearBottom) ui.scroller.scrollTop = ui.scroller.scrollHeight;
  if (state.wasRunning && !running) sidebar.load().catch(showError);
  state.wasRunning = running;
}

function renderStatus(conv) {
  const status = conv?.status ?? "";
  const waiting = status === "interrupted" && clarificationOf(conv);
  const text = {
    running: "Running…", reconnecting: "Reconnecting…", interrupted: waiting ? "Waiting for your answer" : "Interrupted",
    error: "Error", busy: "Running…",
  }[status] ?? "";
  ui.status.textContent = text;
  ui.status.className = `run-status ${status === "reconnecting" ? "running" : status}`;
  ui.status.dataset.status = status;
}

function renderTodos(todos) {
  ui.todos.hidden = todos.length === 0;
  ui.todoList.replaceChildren(...todos.map((todo) => {
    const li = document.createElement("li");
    li.dataset.status = todo.status ?? "pending";
    li.append(String(todo.content ?? ""));
    const stateNote = document.createElement("span");
    stateNote.className = "state";
    stateNote.textContent = (todo.status ?? "pending").replace("_", " ");
    li.append(stateNote);
    return li;
  }));
}

function renderSubagents(conv) {
  const tasks = conv?.tasks ?? new Map();
  ui.tasks.hidden = tasks.size === 0;
  if (!tasks.size) return;
  const args = new Map();
  for (const m of conv.messages) for (const c of m.tool_calls ?? []) if (c.name === "task") args.set(c.id, c.args);
  renderTasks(ui.taskList, tasks, args);
}

function clarificationOf(conv) {
  if (!conv || conv.running) return null;
  const first = conv.interrupts?.[0];
  return first ? first.value ?? {} : null;
}

function renderClarification(conv) {
  const ask = clarificationOf(conv);
  ui.clarification.hidden = !ask;
  if (!ask) return;
  const isClarification = ask.type === "clarification";
  ui.question.textContent = isClarification ? ask.question ?? "The agent has a question." : "The run is waiting for input.";
  ui.context.textContent = isClarification ? ask.context ?? "" : JSON.stringify(ask);
  const options = isClarification && Array.isArray(ask.options) ? ask.options : [];
  ui.options.replaceChildren(...options.map((option) => {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = String(option);
    button.addEventListener("click", () => answer(String(option)));
    return button;
  }));
}

function renderAttachments() {
  ui.attachments.replaceChildren(...state.attachments.map((a) => {
    const li = document.createElement("li");
    li.className = a.status;
    li.textContent = { uploading: `${a.name} (uploading…)`, done: `${a.name} ✓`, failed: `${a.name}: ${a.detail}` }[a.status];
    return li;
  }));
}

// -- navigation ---------------------------------------------------------------------------

function threadFromHash() {
  const match = /^#\/t\/([^/]+)$/.exec(location.hash);
  return match ? decodeURIComponent(match[1]) : null;
}

async function route() {
  const threadId = threadFromHash();
  if (state.conversation?.threadId === threadId && threadId) return;
  state.conversation?.close();
  state.conversation = null;
  state.notice = null;
  state.attachments = [];
  sidebar.select(threadId);
  if (!threadId) {
    scheduleRender();
    ui.prompt.focus();
    return;
  }
  const conv = watch(new Conversation(threadId));
  state.conversation = conv;
  scheduleRender();
  try {
    await conv.load();
  } catch (error) {
    if (state.conversation !== conv) return;
    if (error instanceof api.ApiError && error.status === 404) state.notice = "This conversation does not exist (any more).";
    else showError(error);
  }
  scheduleRender();
}

function watch(conv) {
  conv.addEventListener("change", () => {
    if (state.conversation === conv) scheduleRender();
  });
  return conv;
}

/** The open conversation, creating its thread first when this is a new chat. */
async function ensureConversation() {
  if (state.conversation) return state.conversation;
  const thread = await api.threads.create();
  const conv = watch(new Conversation(thread.thread_id));
  state.conversation = conv;
  sidebar.select(thread.thread_id);
  history.pushState(null, "", `#/t/${encodeURIComponent(thread.thread_id)}`);
  sidebar.load().catch(showError);
  return conv;
}

function newChat() {
  if (location.hash) history.pushState(null, "", location.pathname);
  route();
  closeSidebar();
}

// -- actions ------------------------------------------------------------------------------

function runOptions() {
  const configurable = { is_plan_mode: ui.plan.checked, thinking_enabled: ui.thinking.checked && !ui.thinking.disabled };
  if (ui.model.value) configurable.model_name = ui.model.value;
  return configurable;
}

async function submit(event) {
  event.preventDefault();
  const text = ui.prompt.value.trim();
  if (!text || state.conversation?.running) return;
  state.notice = null;
  try {
    const conv = await ensureConversation();
    ui.prompt.value = "";
    state.attachments = [];
    await conv.send({ text, configurable: runOptions() });
  } catch (error) {
    if (!ui.prompt.value) ui.prompt.value = text;
    showError(error);
  }
}

async function answer(text) {
  const conv = state.conversation;
  if (!conv || conv.running || !text) return;
  ui.answer.value = "";
  try {
    await conv.send({ command: { resume: text }, configurable: runOptions() });
  } catch (error) {
    showError(error);
  }
}

async function upload(fileList) {
  const files = [...fileList];
  if (!files.length) return;
  const entries = files.map((f) => ({ name: f.name, status: "uploading", detail: "" }));
  state.attachments.push(...entries);
  scheduleRender();
  try {
    const conv = await ensureConversation();
    const result = await api.files.upload(conv.threadId, files);
    const stored = result.files ?? [];
    entries.forEach((entry, i) => {
      entry.status = "done";
      if (stored[i]?.filename) entry.name = stored[i].filename;
    });
  } catch (error) {
    for (const entry of entries) Object.assign(entry, { status: "failed", detail: error.message });
  }
  scheduleRender();
}

async function removeThread() {
  const conv = state.conversation;
  if (!conv || !confirm("Delete this conversation and its files?")) return;
  try {
    await api.threads.remove(conv.threadId);
    newChat();
    await sidebar.load();
  } catch (error) {
    showError(error);
  }
}

async function openPreview(path) {
  const conv = state.conversation;
  if (!conv) return;
  ui.previewTitle.textContent = path.split("/").pop();
  ui.previewDownload.href = api.files.artifactUrl(conv.threadId, path, true);
  ui.previewBody.replaceChildren();
  ui.preview.dataset.kind = previewKind(path) ?? "none";
  ui.preview.showModal();
  try {
    await preview(ui.previewBody, conv.threadId, path);
  } catch (error) {
    ui.previewBody.textContent = `Could not load the preview: ${error.message}`;
  }
}

function showError(error) {
  if (error instanceof api.AuthRequired) return;
  state.notice = error?.message ?? String(error);
  scheduleRender();
}

// -- models and options -------------------------------------------------------------------

async function loadModels() {
  const { models } = await api.models();
  state.models = models;
  const saved = localStorage.getItem("fawn:model");
  ui.model.replaceChildren(...models.map((m) => {
    const option = document.createElement("option");
    option.value = m.name;
    option.textContent = m.display_name || m.name;
    return option;
  }));
  if (models.some((m) => m.name === saved)) ui.model.value = saved;
  ui.model.disabled = models.length === 0;
  ui.plan.checked = localStorage.getItem("fawn:plan") === "1";
  ui.thinking.checked = localStorage.getItem("fawn:thinking") === "1";
  syncThinking();
  if (!models.length) state.notice = "No model is configured on this server: add one under `models:` in config.yaml.";
}

function syncThinking() {
  const model = state.models.find((m) => m.name === ui.model.value);
  ui.thinking.disabled = !model?.supports_thinking;
  ui.thinking.parentElement.title = ui.thinking.disabled ? "This model has no thinking mode" : "";
}

// -- sign-in ------------------------------------------------------------------------------

function askSignIn() {
  if (!ui.signin.open) ui.signin.showModal();
}

async function signIn(event) {
  event.preventDefault();
  const form = new FormData(ui.signinForm);
  ui.signinError.hidden = true;
  try {
    await api.signIn(String(form.get("username")), String(form.get("password")));
    ui.signin.close();
    ui.signinForm.reset();
    await start();
  } catch (error) {
    ui.signinError.hidden = false;
    ui.signinError.textContent = error.message;
  }
}

// -- layout -------------------------------------------------------------------------------

function closeSidebar() {
  ui.sidebar.classList.remove("open");
  ui.toggle.setAttribute("aria-expanded", "false");
}

function toggleSidebar() {
  const open = ui.sidebar.classList.toggle("open");
  ui.toggle.setAttribute("aria-expanded", String(open));
  if (open) document.getElementById("thread-search").focus();
}

function wireDrop() {
  let depth = 0;
  const show = (on) => {
    ui.composer.classList.toggle("dragging", on);
    ui.dropHint.hidden = !on;
  };
  ui.app.addEventListener("dragenter", (e) => {
    if (![...(e.dataTransfer?.types ?? [])].includes("Files")) return;
    e.preventDefault();
    depth += 1;
    show(true);
  });
  ui.app.addEventListener("dragover", (e) => {
    if ([...(e.dataTransfer?.types ?? [])].includes("Files")) e.preventDefault();
  });
  ui.app.addEventListener("dragleave", () => {
    depth = Math.max(0, depth - 1);
    if (!depth) show(false);
  });
  ui.app.addEventListener("drop", (e) => {
    e.preventDefault();
    depth = 0;
    show(false);
    upload(e.dataTransfer?.files ?? []);
  });
}

function wire() {
  ui.composer.addEventListener("submit", submit);
  ui.prompt.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      ui.composer.requestSubmit();
    }
  });
  ui.stop.addEventListener("click", () => state.conversation?.cancel().catch(showError));
  ui.answerForm.addEventListener("submit", (e) => {
    e.preventDefault();
    answer(ui.answer.value.trim());
  });
  ui.newChat.addEventListener("click", newChat);
  ui.remove.addEventListener("click", removeThread);
  ui.toggle.addEventListener("click", toggleSidebar);
  ui.fileInput.addEventListener("change", () => {
    upload(ui.fileInput.files);
    ui.fileInput.value = "";
  });
  ui.model.addEventListener("change", () => {
    localStorage.setItem("fawn:model", ui.model.value);
    syncThinking();
  });
  ui.plan.addEventListener("change", () => localStorage.setItem("fawn:plan", ui.plan.checked ? "1" : "0"));
  ui.thinking.addEventListener("change", () => localStorage.setItem("fawn:thinking", ui.thinking.checked ? "1" : "0"));
  ui.previewClose.addEventListener("click", () => ui.preview.close());
  ui.signinForm.addEventListener("submit", signIn);
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && ui.sidebar.classList.contains("open")) closeSidebar();
  });
  window.addEventListener("hashchange", route);
  window.addEventListener("popstate", route);
  window.addEventListener("pagehide", () => state.conversation?.flushCursor());
  wireDrop();
  api.onAuthRequired(askSignIn);
}

async function start() {
  state.notice = null;
  const before = state.conversation;
  try {
    await Promise.all([loadModels(), sidebar.load()]);
  } catch (error) {
    showError(error);
    return;
  }
  // A chat the user started meanwhile (sending right after signing in) is theirs: keep it.
  if (state.conversation !== before) return;
  state.conversation?.close();
  state.conversation = null;
  await route();
}

wire();
start().finally(() => {
  document.documentElement.dataset.ready = "true";
});
