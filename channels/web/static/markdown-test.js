// markdown-test.js checks markdown.js: each case renders Markdown and compares a plain serialization of the
// resulting DOM. The outcome goes into #result as "PASS n" or "FAIL: ...", for a browser test to read.
'use strict';

// show writes the DOM as tags and text; text is shown raw, so a literal "<img" in a text node prints as "<img"
// while an element would print as "<IMG ...>": the two can never be confused.
function show(node) {
  if (node.nodeType === Node.TEXT_NODE) return node.data;
  let s = '';
  for (const c of node.childNodes) s += show(c);
  if (node.nodeType !== Node.ELEMENT_NODE) return s;
  const tag = node.tagName.toUpperCase();
  const attrs = [...node.attributes].map(a => ` ${a.name}=${a.value}`).join('');
  return `<${tag}${attrs}>${s}</${tag}>`;
}

const A = '<A href=https://example.com/ rel=noopener noreferrer nofollow target=_blank>';

const cases = [
  ['plain', 'hello', '<P>hello</P>'],
  ['raw html is text', '<img src=x onerror=alert(1)>', '<P><img src=x onerror=alert(1)></P>'],
  ['script is text', '<script>alert(1)</script>', '<P><script>alert(1)</script></P>'],
  ['html in bold', '**<b>x</b>**', '<P><STRONG><b>x</b></STRONG></P>'],
  ['javascript link', '[x](javascript:alert(1))', '<P>[x](javascript:alert(1))</P>'],
  ['JaVaScRiPt link', '[x](JaVaScRiPt:alert(1))', '<P>[x](JaVaScRiPt:alert(1))</P>'],
  ['data link', '[x](data:text/html,<b>hi</b>)', '<P>[x](data:text/html,<b>hi</b>)</P>'],
  ['vbscript link', '[x](vbscript:msgbox(1))', '<P>[x](vbscript:msgbox(1))</P>'],
  ['relative link', '[x](/api/logout)', '<P>[x](/api/logout)</P>'],
  ['bare javascript', 'javascript:alert(1)', '<P>javascript:alert(1)</P>'],
  ['https link', '[site](https://example.com/)', `<P>${A}site</A></P>`],
  ['link text is text', '[<i>x</i>](https://example.com/)', `<P>${A}<i>x</i></A></P>`],
  ['quote in url', '[x](https://example.com/"onmouseover=alert(1))',
    '<P><A href=https://example.com/%22onmouseover=alert(1) rel=noopener noreferrer nofollow target=_blank>x</A></P>'],
  ['mailto', '[me](mailto:a@example.com)',
    '<P><A href=mailto:a@example.com rel=noopener noreferrer nofollow target=_blank>me</A></P>'],
  ['bare url', 'see https://example.com/.', `<P>see ${A}https://example.com/</A>.</P>`],
  ['inline', '**b** *i* _e_ `<c>` snake_case_name',
    '<P><STRONG>b</STRONG> <EM>i</EM> <EM>e</EM> <CODE><c></CODE> snake_case_name</P>'],
  ['escape', '\\*not em\\*', '<P>*not em*</P>'],
  ['line break', 'a\nb\n\nc', '<P>a<BR></BR>b</P><P>c</P>'],
  ['fence', '```html\n<b>x</b>\n  **y**\n```\nafter', '<PRE><CODE><b>x</b>\n  **y**</CODE></PRE><P>after</P>'],
  ['unclosed fence', '```\ncode', '<PRE><CODE>code</CODE></PRE>'],
  ['headings', '# One\n## Two *i*\n### Three', '<H1>One</H1><H2>Two <EM>i</EM></H2><H3>Three</H3>'],
  ['bullets', '- a\n- **b**\n* c', '<UL><LI>a</LI><LI><STRONG>b</STRONG></LI><LI>c</LI></UL>'],
  ['numbers', '1. a\n2. b', '<OL><LI>a</LI><LI>b</LI></OL>'],
  ['numbers from 3', '3. a\n4. b', '<OL start=3><LI>a</LI><LI>b</LI></OL>'],
  ['nested', '- a\n  - b\n- c', '<UL><LI>a<UL><LI>b</LI></UL></LI><LI>c</LI></UL>'],
  ['quote', '> a <b>\n> b', '<BLOCKQUOTE><P>a <b><BR></BR>b</P></BLOCKQUOTE>'],
  ['rule', 'a\n\n---\n\nb', '<P>a</P><HR></HR><P>b</P>'],
];

function run() {
  const out = document.getElementById('out');
  const failures = [];
  for (const [name, md, want] of cases) {
    const box = document.createElement('div');
    box.append(Markdown.render(md));
    out.append(box);
    const got = [...box.childNodes].map(show).join('');
    if (got !== want) failures.push(`${name}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
  }
  // Whatever the cases say, nothing rendered may be active content.
  if (out.querySelector('img, script, iframe, object, embed, svg, style, form, input')) failures.push('active element rendered');
  for (const e of out.querySelectorAll('*')) {
    for (const a of e.attributes) if (a.name.startsWith('on') || a.name === 'style') failures.push(`attribute ${a.name} rendered`);
  }
  for (const a of out.querySelectorAll('a')) {
    if (!/^(https?|mailto):/.test(a.href)) failures.push(`unsafe link ${a.href}`);
  }
  document.getElementById('result').textContent = failures.length ? 'FAIL: ' + failures.join('; ') : 'PASS ' + cases.length;
}

run();
