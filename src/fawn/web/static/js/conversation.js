// One thread as the page sees it: its durable state, the run in progress and how to follow it.
//
// Truth comes from the server: the thread record (values, status, interrupts) and its active
// run. While a run is active its stream is followed; a dropped connection rejoins the same
// run with Last-Event-ID = the last event seen, and a reload does the same from the cursor
// kept in sessionStorage (with the partial answer, so nothing already shown is lost). A `gap`
// (the cursor fell out of the server's window) or a run that is already over means: reload
// the durable state.

import * as api from "./api.js";
import { readEvents } from "./sse.js";
import { applyTaskEvent } from "./tasks.js";
import { contentText } from "./text.js";

export const STREAM_MODES = ["values", "messages-tuple", "updates", "custom"];
const RETRY_MS = [300, 1000, 2000, 4000, 8000];
const SAVE_MS = 200;

export class Conversation extends EventTarget {
  constructor(threadId) {
    super();
    this.threadId = threadId;
    this.values = { messages: [] };
    this.threadStatus = "idle";
    this.threadError = null;
    this.interrupts = [];
    this.live = new Map(); // message id -> partial AI message from `messages` chunks
    this.tasks = new Map(); // task id -> sub-agent progress
    this.pendingText = null; // the user's message until the server echoes it
    this.runId = null;
    this.lastEventId = null;
    this.running = false;
    this.reconnecting = false;
    this.error = null;
    this.closed = false;
    this.controller = new AbortController();
    this.saveTimer = null;
    this.received = 0;
    this.pump = null;
  }

  /** Everything to render: state messages, then what is still streaming. */
  get messages() {
    const known = new Set(this.values.messages?.map((m) => m.id));
    const live = [...this.live.values()].filter((m) => !known.has(m.id));
    const pending = this.pendingText === null ? [] : [{ type: "human", id: "pending", content: this.pendingText }];
    return [...(this.values.messages ?? []), ...pending, ...live];
  }

  get streamingIds() {
    return new Set(this.live.keys());
  }

  /** The status line: "running", "reconnecting", or the thread's own status. */
  get status() {
    if (this.running) return this.reconnecting ? "reconnecting" : "running";
    return this.threadStatus;
  }

  changed() {
    this.dispatchEvent(new Event("change"));
  }

  close() {
    this.closed = true;
    this.flushCursor();
    this.controller.abort();
  }

  /** Read the thread and, if a run is active, follow it from where this page left it. */
  async load() {
    const active = await api.runs.active(this.threadId);
    this.applyThread(await api.threads.get(this.threadId));
    if (active) {
      this.adoptRun(active.run_id);
      this.changed();
      this.pump = this.follow(null);
      return;
    }
    clearCursor(this.threadId);
    this.changed();
  }

  adoptRun(runId) {
    const saved = readCursor(this.threadId);
    this.runId = runId;
    this.running = true;
    if (saved && saved.run_id === runId) {
      this.lastEventId = saved.last_event_id;
      this.live = new Map(saved.live);
      this.tasks = new Map(saved.tasks);
    } else {
      // No cursor for this run: replay what the server retains of it from the start.
      this.lastEventId = null;
    }
  }

  /** Start a run: a new user message, or `command` (e.g. {resume: answer}). */
  async send({ text = null, command = null, configurable = {} }) {
    if (this.running) throw new Error("a run is already in progress");
    const body = {
      assistant_id: "lead_agent",
      stream_mode: STREAM_MODES,
      stream_resumable: true,
      on_disconnect: "continue",
      multitask_strategy: "reject",
      config: { configurable },
    };
    if (command) body.command = command;
    else body.input = { messages: [{ role: "user", content: text }] };
    this.pendingText = command ? null : text;
    this.running = true;
    this.error = null;
    this.interrupts = [];
    this.tasks = new Map();
    this.lastEventId = null;
    this.changed();
    let response;
    try {
      response = await api.runs.stream(this.threadId, body, this.controller.signal);
    } catch (error) {
      this.running = false;
      this.pendingText = null;
      this.changed();
      throw error;
    }
    this.runId = runFromLocation(response.headers.get("Content-Location"));
    this.pump = this.follow(response);
  }

  async cancel() {
    if (this.runId) await api.runs.cancel(this.threadId, this.runId);
  }

  /** Follow the active run until it is over (owned by the conversation, ends on close()). */
  async follow(response) {
    try {
      await this.followLoop(response);
    } catch (error) {
      this.error = error.message;
      this.stop();
    }
  }

  async followLoop(response) {
    let attempt = 0;
    while (!this.closed) {
      let outcome;
      try {
        const source = response ?? (await api.runs.join(this.threadId, this.runId, this.lastEventId, STREAM_MODES, this.controller.signal));
        response = null;
        this.reconnecting = false;
        this.changed();
        const before = this.received;
        outcome = await this.consume(source);
        if (this.received > before) attempt = 0;
      } catch (error) {
        if (this.closed) return;
        if (error instanceof api.AuthRequired) return this.stop();
        // 404: the run's stream is gone (finished and cleaned up): the state has the rest.
        outcome = error instanceof api.ApiError && error.status === 404 ? "over" : "dropped";
      }
      if (outcome === "end" || outcome === "over") return this.finish();
      if (outcome === "gap") await this.reloadState();
      const still = await this.stillActive(attempt);
      if (still === false) return this.finish();
      if (outcome !== "gap" || still === null) {
        this.reconnecting = true;
        this.changed();
        await sleep(RETRY_MS[Math.min(attempt, RETRY_MS.length - 1)], this.controller.signal);
        attempt += 1;
      }
    }
  }

  /** true/false once the server says; null when it cannot be reached right now. */
  async stillActive() {
    if (!this.runId) return false;
    try {
      const run = await api.runs.get(this.threadId, this.runId);
      return run.status === "pending" || run.status === "running";
    } catch (error) {
      if (error instanceof api.ApiError && error.status === 404) return false;
      return null;
    }
  }

  /** Apply a stream's events; "end", "gap", or "closed" when it ended without saying. */
  async consume(response) {
    for await (const event of readEvents(response)) {
      if (this.closed) return "closed";
      if (event.event === "gap") {
        if (event.id) this.lastEventId = event.id;
        return "gap";
      }
      if (event.id) this.lastEventId = event.id;
      this.received += 1;
      if (event.event === "end") return "end";
      this.apply(event);
      this.saveCursorSoon();
      this.changed();
    }
    return "closed";
  }

  apply({ event, data }) {
    if (event === "metadata" && data?.run_id) this.runId = data.run_id;
    else if (event === "values" && data && typeof data === "object") this.applyValues(data);
    else if (event === "messages" && Array.isArray(data)) this.applyChunk(data[0], data[1]);
    else if (event === "updates" && data?.__interrupt__) this.interrupts = data.__interrupt__;
    else if (event === "custom") applyTaskEvent(this.tasks, data);
    else if (event === "error") this.error = data?.message || data?.error || "The run failed.";
  }

  applyValues(values) {
    this.values = values;
    const ids = new Set((values.messages ?? []).map((m) => m.id));
    for (const id of [...this.live.keys()]) if (ids.has(id)) this.live.delete(id);
    if (this.pendingText !== null && (values.messages ?? []).some((m) => m.type === "human" && contentText(m.content).includes(this.pendingText))) {
      this.pendingText = null;
    }
    if (values.__interrupt__) this.interrupts = values.__interrupt__;
  }

  applyChunk(chunk, metadata) {
    if (!chunk?.id || metadata?.langgraph_node !== "model") return;
    if ((this.values.messages ?? []).some((m) => m.id === chunk.id)) return;
    const message = this.live.get(chunk.id) ?? { type: "ai", id: chunk.id, content: "", tool_calls: [] };
    message.content += contentText(chunk.content);
    for (const part of chunk.tool_call_chunks ?? []) mergeCallChunk(message, part);
    this.live.set(chunk.id, message);
  }

  /** The run is over: the durable state is the truth now. */
  async finish() {
    this.running = false;
    this.reconnecting = false;
    this.runId = null;
    this.lastEventId = null;
    clearCursor(this.threadId);
    await this.reloadState();
  }

  stop() {
    this.running = false;
    this.reconnecting = false;
    this.changed();
  }

  async reloadState() {
    try {
      this.applyThread(await api.threads.get(this.threadId));
    } catch (error) {
      if (!(error instanceof api.AuthRequired)) this.error = error.message;
    }
    this.live.clear();
    this.pendingText = null;
    this.changed();
  }

  applyThread(thread) {
    this.values = thread.values ?? { messages: [] };
    this.threadStatus = thread.status ?? "idle";
    this.threadError = thread.error ?? null;
    this.interrupts = Object.values(thread.interrupts ?? {}).flat();
    if (this.values.__interrupt__) this.interrupts = this.values.__interrupt__;
  }

  saveCursorSoon() {
    if (this.saveTimer !== null) return;
    this.saveTimer = setTimeout(() => this.flushCursor(), SAVE_MS);
  }

  flushCursor() {
    if (this.saveTimer !== null) clearTimeout(this.saveTimer);
    this.saveTimer = null;
    if (!this.running || !this.runId) return;
    writeCursor(this.threadId, {
      run_id: this.runId,
      last_event_id: this.lastEventId,
      live: [...this.live.entries()],
      tasks: [...this.tasks.entries()],
    });
  }
}

function mergeCallChunk(message, part) {
  const index = Number.isInteger(part.index) ? part.index : message.tool_calls.length;
  const call = message.tool_calls[index] ?? { id: null, name: "", args: "" };
  if (part.id) call.id = part.id;
  if (part.name) call.name += part.name;
  if (part.args) call.args += part.args;
  message.tool_calls[index] = call;
}

function runFromLocation(location) {
  const match = /\/runs\/([^/?#]+)/.exec(location ?? "");
  return match ? decodeURIComponent(match[1]) : null;
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => { clearTimeout(timer); resolve(); }, { once: true });
    window.addEventListener("online", () => { clearTimeout(timer); resolve(); }, { once: true });
  });
}

const cursorKey = (threadId) => `fawn:run:${threadId}`;

function readCursor(threadId) {
  try {
    return JSON.parse(sessionStorage.getItem(cursorKey(threadId)) ?? "null");
  } catch {
    return null;
  }
}

function writeCursor(threadId, cursor) {
  try {
    sessionStorage.setItem(cursorKey(threadId), JSON.stringify(cursor));
  } catch {
    // storage full or disabled: a reload then replays the run from the server instead
  }
}

function clearCursor(threadId) {
  sessionStorage.removeItem(cursorKey(threadId));
}
