// chart.js draws the console's charts as plain SVG built with createElementNS. Colours come from classes in
// style.css (s0..s7), so they follow the light and dark themes and need no style attributes.
'use strict';

(function () {
  const NS = 'http://www.w3.org/2000/svg';
  const COLOURS = 8;

  function svg(tag, attrs, parent) {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (parent) parent.append(e);
    return e;
  }

  function text(parent, x, y, s, cls, anchor) {
    const t = svg('text', { x, y, class: cls || 'axis', 'text-anchor': anchor || 'start' }, parent);
    t.textContent = s;
    return t;
  }

  // fmt writes a count briefly: 950, 12.3k, 4.5M.
  function fmt(n) {
    if (n >= 1e6) return (n / 1e6).toFixed(n >= 1e7 ? 0 : 1) + 'M';
    if (n >= 1e3) return (n / 1e3).toFixed(n >= 1e4 ? 0 : 1) + 'k';
    return String(Math.round(n));
  }

  // niceMax rounds the top of the scale up to 1, 2 or 5 times a power of ten.
  function niceMax(n) {
    if (n <= 0) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(n)));
    return [1, 2, 5, 10].map(f => f * p).find(v => v >= n);
  }

  function percent(part, whole) {
    return whole ? Math.round(100 * part / whole) + '%' : '0%';
  }

  // stacked returns a <figure> with a stacked bar chart, one bar per day and one layer per series, and a legend.
  // series: [{name, values: [tokens per day], total, prompt, cached}], the largest first.
  function stacked(name, title, days, series) {
    const W = 640, H = 250, L = 44, R = 8, T = 12, B = 36;
    const plotH = H - T - B;
    const totals = days.map((_, i) => series.reduce((sum, s) => sum + s.values[i], 0));
    const max = niceMax(Math.max(0, ...totals));
    const root = svg('svg', { class: 'chart', 'data-chart': name, viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': title });

    // Horizontal grid lines with their values.
    for (let k = 0; k <= 4; k++) {
      const y = T + plotH - plotH * k / 4;
      svg('line', { x1: L, x2: W - R, y1: y, y2: y, class: k ? 'grid' : 'baseline' }, root);
      text(root, L - 4, y + 4, fmt(max * k / 4), 'axis', 'end');
    }
    const yLabel = text(root, 0, 0, 'tokens', 'axis-title', 'middle');
    yLabel.setAttribute('transform', `translate(10 ${T + plotH / 2}) rotate(-90)`);

    const step = (W - L - R) / Math.max(days.length, 1);
    const every = Math.ceil(days.length / 10); // at most about ten day labels
    days.forEach((day, i) => {
      const x = L + i * step + step * 0.1;
      let y = T + plotH;
      series.forEach((s, k) => {
        const v = s.values[i];
        if (!v) return;
        const h = plotH * v / max;
        y -= h;
        const bar = svg('rect', { class: `bar s${k % COLOURS}`, x: x.toFixed(1), y: y.toFixed(1),
          width: (step * 0.8).toFixed(1), height: h.toFixed(1) }, root);
        svg('title', {}, bar).textContent = `${day} · ${s.name}: ${v.toLocaleString()} tokens`;
      });
      if (i % every === 0) text(root, x + step * 0.4, H - B + 14, day.slice(5), 'axis', 'middle');
    });
    text(root, L + (W - L - R) / 2, H - 4, 'day (UTC)', 'axis-title', 'middle');

    const legend = document.createElement('ul');
    legend.className = 'legend';
    series.forEach((s, k) => {
      const li = document.createElement('li');
      const swatch = document.createElement('span');
      swatch.className = `swatch s${k % COLOURS}`;
      li.append(swatch, `${s.name} — ${fmt(s.total)} tokens, ${percent(s.cached, s.prompt)} of prompt cached`);
      legend.append(li);
    });
    if (!series.length) legend.append(Object.assign(document.createElement('li'), { textContent: 'No usage.' }));

    const fig = document.createElement('figure');
    const cap = document.createElement('figcaption');
    cap.textContent = title;
    fig.append(cap, root, legend);
    return fig;
  }

  // budget returns an SVG bar of today's use against the daily limit (limit 0: no limit, an empty track).
  function budget(b) {
    const used = b.used_today || 0, limit = b.limit || 0;
    const root = svg('svg', { class: 'budget', viewBox: '0 0 400 16', preserveAspectRatio: 'none', role: 'img',
      'aria-label': limit ? `${percent(used, limit)} of the daily budget used` : 'no daily budget' });
    svg('rect', { class: 'track', x: 0, y: 0, width: 400, height: 16, rx: 4 }, root);
    if (limit) {
      svg('rect', { class: used > limit ? 'used over' : 'used', x: 0, y: 0, width: Math.min(400, 400 * used / limit).toFixed(1),
        height: 16, rx: 4 }, root);
    }
    return root;
  }

  window.Charts = { stacked, budget, fmt, percent };
})();
