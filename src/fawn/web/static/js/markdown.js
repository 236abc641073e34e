// A small Markdown renderer that builds DOM nodes: text only ever lands in textContent, so
// nothing the model writes can become markup. Supports paragraphs, headings, fenced code,
// block quotes, lists, rules, and inline code, bold, italics and http(s)/mailto links.

const SAFE_LINK = /^(https?:|mailto:)/i;
const INLINE = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|_([^_\s][^_]*)_|!?\[([^\]]*)\]\(([^)\s]+)\)|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])/;

/** A DocumentFragment for `text`. */
export function renderMarkdown(text) {
  const root = document.createDocumentFragment();
  const lines = String(text ?? "").replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  while (i < lines.length) i = block(lines, i, root);
  return root;
}

function block(lines, i, parent) {
  const line = lines[i];
  if (!line.trim()) return i + 1;
  const fence = line.match(/^\s*(```|~~~)\s*([\w+-]*)/);
  if (fence) return codeBlock(lines, i, fence, parent);
  const heading = line.match(/^(#{1,6})\s+(.*)$/);
  if (heading) {
    const h = el(`h${Math.min(heading[1].length + 2, 6)}`);
    inline(heading[2].replace(/\s+#+\s*$/, ""), h);
    parent.append(h);
    return i + 1;
  }
  if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
    parent.append(el("hr"));
    return i + 1;
  }
  if (/^\s*>/.test(line)) return quote(lines, i, parent);
  if (/^\s*([-*+]|\d+[.)])\s+/.test(line)) return list(lines, i, parent);
  return paragraph(lines, i, parent);
}

function codeBlock(lines, i, fence, parent) {
  const body = [];
  let j = i + 1;
  while (j < lines.length && !lines[j].trim().startsWith(fence[1])) body.push(lines[j++]);
  const pre = el("pre");
  const code = el("code");
  if (fence[2]) code.dataset.lang = fence[2];
  code.textContent = body.join("\n");
  pre.append(code);
  parent.append(pre);
  return j + 1;
}

function quote(lines, i, parent) {
  const body = [];
  while (i < lines.length && /^\s*>/.test(lines[i])) body.push(lines[i++].replace(/^\s*>\s?/, ""));
  const bq = el("blockquote");
  bq.append(renderMarkdown(body.join("\n")));
  parent.append(bq);
  return i;
}

function list(lines, i, parent) {
  const ordered = /^\s*\d+[.)]\s+/.test(lines[i]);
  const item = ordered ? /^\s*\d+[.)]\s+(.*)$/ : /^\s*[-*+]\s+(.*)$/;
  const node = el(ordered ? "ol" : "ul");
  let current = null;
  while (i < lines.length && lines[i].trim()) {
    const match = lines[i].match(item);
    if (match) {
      current = el("li");
      inline(match[1], current);
      node.append(current);
    } else if (current && /^\s+/.test(lines[i])) {
      current.append(" ");
      inline(lines[i].trim(), current);
    } else {
      break;
    }
    i += 1;
  }
  parent.append(node);
  return i;
}

function paragraph(lines, i, parent) {
  const p = el("p");
  let first = true;
  while (i < lines.length && lines[i].trim() && !startsBlock(lines[i])) {
    if (!first) p.append(el("br"));
    inline(lines[i], p);
    first = false;
    i += 1;
  }
  parent.append(p);
  return i;
}

function startsBlock(line) {
  return /^\s*(```|~~~|#{1,6}\s|>|([-*+]|\d+[.)])\s+)/.test(line);
}

/** Append `text`'s inline Markdown to `parent`. */
export function inline(text, parent) {
  let rest = text;
  while (rest) {
    const m = rest.match(INLINE);
    if (!m) {
      parent.append(rest);
      return;
    }
    if (m.index > 0) parent.append(rest.slice(0, m.index));
    parent.append(inlineNode(m));
    rest = rest.slice(m.index + m[0].length);
  }
}

function inlineNode(m) {
  if (m[1]) return withText(el("code"), m[2].replace(/^ (.*) $/, "$1"));
  if (m[3] || m[4]) return withInline(el("strong"), m[3] || m[4]);
  if (m[5] || m[6]) return withInline(el("em"), m[5] || m[6]);
  if (m[8] !== undefined) return link(m[7] || m[8], m[8]);
  return link(m[9], m[9]);
}

function link(label, href) {
  if (!SAFE_LINK.test(href)) return document.createTextNode(label);
  const a = el("a");
  a.href = href;
  a.rel = "noopener noreferrer nofollow";
  a.target = "_blank";
  a.textContent = label;
  return a;
}

function el(tag) {
  return document.createElement(tag);
}

function withText(node, text) {
  node.textContent = text;
  return node;
}

function withInline(node, text) {
  inline(text, node);
  return node;
}
