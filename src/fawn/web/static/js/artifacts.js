// Files the agent presented: listed with a download link, previewed when that is safe.
// Images go in an <img>; text and Markdown are fetched and shown escaped (Markdown through
// the DOM renderer); HTML, SVG and anything else are never rendered, only downloaded.

import * as api from "./api.js";
import { renderMarkdown } from "./markdown.js";

const IMAGE = /\.(png|jpe?g|gif|webp|bmp|avif)$/i;
const MARKDOWN = /\.(md|markdown)$/i;
const TEXT = /\.(txt|csv|tsv|json|jsonl|log|py|js|ts|tsx|jsx|css|sh|yaml|yml|toml|ini|cfg|sql|go|rs|java|c|h|cpp|hpp|rb|php|r|tex|diff|patch)$/i;
const PREVIEW_BYTES = 512 * 1024;

export function previewKind(path) {
  if (IMAGE.test(path)) return "image";
  if (MARKDOWN.test(path)) return "markdown";
  if (TEXT.test(path)) return "text";
  return null;
}

export function renderArtifacts(list, threadId, paths, onPreview) {
  list.replaceChildren(...paths.map((path) => {
    const li = document.createElement("li");
    li.dataset.path = path;
    const name = document.createElement("span");
    name.className = "name";
    name.textContent = path.split("/").pop();
    name.title = path;
    li.append(name);
    if (previewKind(path)) {
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = "Preview";
      button.setAttribute("aria-label", `Preview ${name.textContent}`);
      button.addEventListener("click", () => onPreview(path));
      li.append(button);
    }
    const link = document.createElement("a");
    link.className = "button";
    link.href = api.files.artifactUrl(threadId, path, true);
    link.download = name.textContent;
    link.textContent = "Download";
    link.setAttribute("aria-label", `Download ${name.textContent}`);
    li.append(link);
    return li;
  }));
}

/** Fill `body` with a safe preview of the artifact. */
export async function preview(body, threadId, path) {
  const kind = previewKind(path);
  const url = api.files.artifactUrl(threadId, path);
  if (kind === "image") {
    const img = document.createElement("img");
    img.src = url;
    img.alt = path.split("/").pop();
    body.replaceChildren(img);
    return;
  }
  if (!kind) {
    body.replaceChildren(note("No preview for this kind of file: download it."));
    return;
  }
  const response = await api.request("GET", url, { headers: { Range: `bytes=0-${PREVIEW_BYTES - 1}` } });
  const text = await response.text();
  const total = Number(/\/(\d+)$/.exec(response.headers.get("Content-Range") ?? "")?.[1] ?? 0);
  const truncated = response.status === 206 && total > PREVIEW_BYTES;
  if (kind === "markdown") {
    const article = document.createElement("article");
    article.className = "msg";
    article.append(renderMarkdown(text));
    body.replaceChildren(article);
  } else {
    const pre = document.createElement("pre");
    pre.textContent = text;
    body.replaceChildren(pre);
  }
  if (truncated) body.append(note("Preview truncated: download the file to see all of it."));
}

function note(text) {
  const p = document.createElement("p");
  p.className = "muted";
  p.textContent = text;
  return p;
}
