// The conversation list: newest first, filtered as you type, paged with "Load more".

import * as api from "./api.js";
import { withoutUploadBlock } from "./text.js";

const PAGE = 30;

export class Sidebar {
  constructor({ list, search, more, empty, onOpen }) {
    Object.assign(this, { list, search, more, empty, onOpen });
    this.threads = [];
    this.next = 0;
    this.current = null;
    search.addEventListener("input", () => this.render());
    more.addEventListener("click", () => this.load({ append: true }));
  }

  async load({ append = false } = {}) {
    const offset = append ? this.next : 0;
    const response = await api.threads.search({ limit: PAGE, offset });
    const page = await response.json();
    this.threads = append ? [...this.threads, ...page] : page;
    const next = response.headers.get("X-Pagination-Next");
    this.next = next === null ? null : Number(next);
    this.render();
  }

  select(threadId) {
    this.current = threadId;
    this.render();
  }

  render() {
    const query = this.search.value.trim().toLowerCase();
    const shown = this.threads.filter((t) => !query || title(t).toLowerCase().includes(query));
    this.list.replaceChildren(...shown.map((t) => this.item(t)));
    this.empty.hidden = shown.length > 0;
    this.empty.textContent = query ? "No conversation matches." : "No conversations yet.";
    this.more.hidden = this.next === null;
  }

  item(thread) {
    const li = document.createElement("li");
    const a = document.createElement("a");
    a.href = `#/t/${encodeURIComponent(thread.thread_id)}`;
    a.dataset.threadId = thread.thread_id;
    if (thread.thread_id === this.current) a.setAttribute("aria-current", "page");
    const name = document.createElement("span");
    name.className = "t-title";
    name.textContent = title(thread);
    const meta = document.createElement("span");
    meta.className = "t-meta";
    if (thread.status && thread.status !== "idle") {
      const badge = document.createElement("span");
      badge.className = `badge ${thread.status}`;
      badge.textContent = statusLabel(thread.status);
      meta.append(badge);
    }
    meta.append(when(thread.updated_at));
    a.append(name, meta);
    a.addEventListener("click", () => this.onOpen(thread.thread_id));
    li.append(a);
    return li;
  }
}

export function title(thread) {
  const extracted = thread.extracted ?? {};
  if (typeof extracted.title === "string" && extracted.title.trim()) return extracted.title.trim();
  const first = typeof extracted.first === "string" ? withoutUploadBlock(extracted.first) : "";
  return first ? first.slice(0, 60) : "New chat";
}

export function statusLabel(status) {
  return { busy: "running", interrupted: "waiting", error: "error" }[status] ?? status;
}

function when(iso) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return "";
  const sameDay = date.toDateString() === new Date().toDateString();
  return sameDay ? date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }) : date.toLocaleDateString();
}
