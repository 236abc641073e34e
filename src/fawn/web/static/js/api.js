// The public API, as the SDKs use it. Same-origin fetches only; the session cookie (when the
// server has auth) travels by itself, and state-changing requests echo the csrf_token cookie.

export class ApiError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
    this.detail = detail;
  }
}

export class AuthRequired extends ApiError {}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);
const authListeners = new Set();

/** Call `listener()` whenever the server answers 401 (the page then asks the user to sign in). */
export function onAuthRequired(listener) {
  authListeners.add(listener);
}

export function csrfToken() {
  for (const part of document.cookie.split(";")) {
    const [name, ...rest] = part.trim().split("=");
    if (name === "csrf_token") return decodeURIComponent(rest.join("="));
  }
  return null;
}

/** fetch() with the CSRF header, error bodies turned into ApiError, 401 into AuthRequired. */
export async function request(method, path, { json, body, headers = {}, signal } = {}) {
  const h = new Headers(headers);
  if (json !== undefined) {
    h.set("Content-Type", "application/json");
    body = JSON.stringify(json);
  }
  if (!SAFE_METHODS.has(method)) {
    const token = csrfToken();
    if (token && !h.has("X-CSRF-Token")) h.set("X-CSRF-Token", token);
  }
  const response = await fetch(path, {
    method, headers: h, body, signal, credentials: "same-origin", cache: "no-store",
  });
  if (response.ok) return response;
  const detail = await errorDetail(response);
  if (response.status === 401) {
    for (const listener of authListeners) listener();
    throw new AuthRequired(401, detail);
  }
  throw new ApiError(response.status, detail);
}

async function errorDetail(response) {
  try {
    const body = await response.json();
    if (body && typeof body.detail === "string") return body.detail;
    if (body && body.detail !== undefined) return JSON.stringify(body.detail);
  } catch {
    // not JSON
  }
  return `${response.status} ${response.statusText}`.trim();
}

export async function getJSON(path, options) {
  return (await request("GET", path, options)).json();
}

export async function postJSON(path, json, options = {}) {
  return (await request("POST", path, { ...options, json })).json();
}

const enc = encodeURIComponent;

export const threads = {
  create: () => postJSON("/threads", { metadata: { created_by: "fawn-web" } }),
  get: (id) => getJSON(`/threads/${enc(id)}`),
  remove: (id) => request("DELETE", `/threads/${enc(id)}`),
  search: ({ limit, offset }) =>
    request("POST", "/threads/search", {
      json: {
        limit, offset, sort_by: "updated_at", sort_order: "desc",
        select: ["thread_id", "status", "created_at", "updated_at"],
        extract: { title: "values.title", first: "values.messages[0].content" },
      },
    }),
};

export const runs = {
  /** The thread's active run (running, else pending), or null. */
  async active(threadId) {
    for (const status of ["running", "pending"]) {
      const found = await getJSON(`/threads/${enc(threadId)}/runs?limit=1&status=${status}`);
      if (found.length) return found[0];
    }
    return null;
  },
  get: (threadId, runId) => getJSON(`/threads/${enc(threadId)}/runs/${enc(runId)}`),
  stream: (threadId, body, signal) =>
    request("POST", `/threads/${enc(threadId)}/runs/stream`, {
      json: body, signal, headers: { Accept: "text/event-stream" },
    }),
  join: (threadId, runId, lastEventId, modes, signal) => {
    const query = modes.map((m) => `stream_mode=${enc(m)}`).join("&");
    const headers = { Accept: "text/event-stream" };
    if (lastEventId) headers["Last-Event-ID"] = String(lastEventId);
    return request("GET", `/threads/${enc(threadId)}/runs/${enc(runId)}/stream?${query}`, {
      headers, signal,
    });
  },
  cancel: (threadId, runId) =>
    request("POST", `/threads/${enc(threadId)}/runs/${enc(runId)}/cancel?action=interrupt`),
};

export const files = {
  upload(threadId, fileList) {
    const form = new FormData();
    for (const file of fileList) form.append("files", file, file.name);
    return request("POST", `/api/threads/${enc(threadId)}/uploads`, { body: form })
      .then((r) => r.json());
  },
  list: (threadId) => getJSON(`/api/threads/${enc(threadId)}/uploads`),
  artifactUrl: (threadId, virtualPath, download = false) =>
    `/api/threads/${enc(threadId)}/artifacts/${virtualPath.replace(/^\/+/, "").split("/").map(enc).join("/")}` +
    (download ? "?download=true" : ""),
};

export const models = () => getJSON("/api/models");

export async function signIn(username, password) {
  const body = new URLSearchParams({ username, password });
  await request("POST", "/api/v1/auth/login/local", {
    body, headers: { "Content-Type": "application/x-www-form-urlencoded" },
  });
}
