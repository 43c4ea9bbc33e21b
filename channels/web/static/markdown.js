// markdown.js renders the model's Markdown as DOM nodes. It never builds HTML from text: every piece of text
// becomes a text node, so raw HTML in a reply shows as the characters it is. Links are made only for absolute
// http:, https: and mailto: URLs; any other link stays plain text.
'use strict';

(function () {
  const FENCE = /^ {0,3}(```|~~~)/;
  const HEADING = /^ {0,3}(#{1,3})\s+(.*?)(\s+#+)?\s*$/;
  const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
  const QUOTE = /^ {0,3}>\s?(.*)$/;
  const ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
  const LINK = /^\[([^\]]+)\]\(([^()\s]*(?:\([^()\s]*\)[^()\s]*)*)\)/;
  const BARE = /^https?:\/\/[^\s<>]+/;
  const STRONG = { '*': /^\*\*(?=\S)(.+?)(?<=\S)\*\*/, '_': /^__(?=\S)(.+?)(?<=\S)__(?!\w)/ };
  const EM = { '*': /^\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?!\*)/, '_': /^_(?=[^\s_])(.+?)(?<=[^\s_])_(?!\w)/ };

  function h(tag) { return document.createElement(tag); }

  // safeURL returns the normalized URL when it is absolute and http:, https: or mailto:, else null.
  // new URL does the scheme parsing a browser would do (case, stray whitespace, control characters).
  function safeURL(s) {
    let u;
    try { u = new URL(s); } catch { return null; }
    return ['http:', 'https:', 'mailto:'].includes(u.protocol) ? u.href : null;
  }

  function startsBlock(line) {
    return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) || ITEM.test(line);
  }

  // blocks renders lines as block elements into parent.
  function blocks(lines, parent) {
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      let m;
      if (!line.trim()) { i++; continue; }
      if ((m = FENCE.exec(line))) {
        const code = [];
        for (i++; i < lines.length && !lines[i].trim().startsWith(m[1]); i++) code.push(lines[i]);
        i++; // the closing fence, or past the end when there is none
        const pre = h('pre'), c = h('code');
        c.textContent = code.join('\n');
        pre.append(c);
        parent.append(pre);
      } else if ((m = HEADING.exec(line))) {
        const e = h('h' + m[1].length);
        inline(m[2], e);
        parent.append(e);
        i++;
      } else if (RULE.test(line)) {
        parent.append(h('hr'));
        i++;
      } else if (QUOTE.test(line)) {
        const inner = [];
        for (; i < lines.length && (m = QUOTE.exec(lines[i])); i++) inner.push(m[1]);
        const q = h('blockquote');
        blocks(inner, q);
        parent.append(q);
      } else if (ITEM.test(line)) {
        i = list(lines, i, parent);
      } else {
        const p = h('p');
        do {
          if (p.firstChild) p.append(h('br'));
          inline(lines[i].trim(), p);
          i++;
        } while (i < lines.length && lines[i].trim() && !startsBlock(lines[i]));
        parent.append(p);
      }
    }
  }

  // list renders the list starting at lines[i] and returns the index after it. Lines indented deeper than the
  // item's marker belong to the item (continuations and nested lists).
  function list(lines, i, parent) {
    const first = ITEM.exec(lines[i]);
    const ordered = /\d/.test(first[2]);
    const indent = first[1].length;
    const e = h(ordered ? 'ol' : 'ul');
    if (ordered && parseInt(first[2], 10) !== 1) e.start = parseInt(first[2], 10);
    let body = null;
    const flush = () => { if (body) e.append(item(body)); };
    while (i < lines.length) {
      const line = lines[i];
      const m = ITEM.exec(line);
      if (m && m[1].length <= indent && /\d/.test(m[2]) === ordered) {
        flush();
        body = [m[3]];
      } else if (line.trim() && (/^\s/.test(line) || !startsBlock(line))) {
        body.push(line);
      } else if (!line.trim() && i + 1 < lines.length && /^\s+\S/.test(lines[i + 1])) {
        body.push('');
      } else if (!line.trim() && i + 1 < lines.length && ITEM.test(lines[i + 1]) &&
                 ITEM.exec(lines[i + 1])[1].length <= indent) {
        // a blank line between two items of the same list
      } else {
        break;
      }
      i++;
    }
    flush();
    parent.append(e);
    return i;
  }

  // item renders one list item: its first lines inline, anything after them (nested lists, code) as blocks.
  function item(body) {
    const li = h('li');
    inline(body[0], li);
    let k = 1;
    for (; k < body.length && body[k].trim() && !startsBlock(body[k]); k++) {
      li.append(h('br'));
      inline(body[k].trim(), li);
    }
    const rest = body.slice(k);
    const pad = Math.min(...rest.filter(l => l.trim()).map(l => l.match(/^\s*/)[0].length));
    if (rest.length) blocks(rest.map(l => l.slice(pad)), li);
    return li;
  }

  function link(url, label, parent) {
    const a = h('a');
    a.href = url;
    a.rel = 'noopener noreferrer nofollow';
    a.target = '_blank';
    inline(label, a, true);
    parent.append(a);
  }

  // inline renders one line's spans into parent. noLinks is set inside a link's text.
  function inline(s, parent, noLinks) {
    let text = '';
    const flush = () => { if (text) parent.append(text); text = ''; };
    for (let i = 0; i < s.length;) {
      const c = s[i], rest = s.slice(i);
      let m, url;
      if (c === '\\' && /[\\`*_[\]()#>!+.-]/.test(s[i + 1] || '')) {
        text += s[i + 1];
        i += 2;
        continue;
      }
      if (c === '`' && (m = /^(`+)(.+?)\1(?!`)/.exec(rest))) {
        flush();
        const code = h('code');
        code.textContent = m[2];
        parent.append(code);
      } else if ((c === '*' || c === '_') && (c === '*' || !/\w/.test(s[i - 1] || '')) &&
                 (m = STRONG[c].exec(rest) || EM[c].exec(rest))) {
        flush();
        const e = h(m[0].startsWith(c + c) ? 'strong' : 'em'); // EM never matches a doubled marker
        inline(m[1], e, noLinks);
        parent.append(e);
      } else if (!noLinks && c === '[' && (m = LINK.exec(rest))) {
        url = safeURL(m[2]);
        if (!url) { text += m[0]; i += m[0].length; continue; }
        flush();
        link(url, m[1], parent);
      } else if (!noLinks && c === 'h' && !/\w/.test(s[i - 1] || '') && (m = BARE.exec(rest))) {
        const u = m[0].replace(/[.,;:!?'")\]]+$/, '');
        m = [u];
        url = safeURL(u);
        if (!url) { text += u; i += u.length; continue; }
        flush();
        link(url, u, parent);
      } else {
        text += c;
        i++;
        continue;
      }
      i += m[0].length;
    }
    flush();
  }

  // render returns a DocumentFragment for the Markdown text.
  function render(text) {
    const f = document.createDocumentFragment();
    blocks(String(text || '').replace(/\r\n?/g, '\n').split('\n'), f);
    return f;
  }

  window.Markdown = { render, safeURL };
})();
