// The report's viewer. Everything from the results is untrusted text: the DOM is built with
// createElement / createElementNS, textContent and setAttribute only; nothing is parsed as HTML.
(function () {
  'use strict';
  const INDEX = JSON.parse(document.getElementById('index').textContent);
  const F = {};
  INDEX.episode_fields.forEach((f, i) => { F[f] = i; });
  const EPS = INDEX.episodes;
  const CELLS = INDEX.cells;
  // Series are told apart by colour, marker and dash together: 12 colours × 4 markers × 3 dashes,
  // so a 24-cell experiment's legend repeats no encoding.
  const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#17becf', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#393b79', '#637939'];
  const MARKERS = ['circle', 'square', 'triangle', 'diamond'];
  const DASHES = [null, '6 3', '2 3'];
  const METHOD_ROLES = ['agent', 'tool', 'state', 'memory', 'sentinel'];
  const SVGNS = 'http://www.w3.org/2000/svg';

  // ------------------------------------------------------------------ DOM helpers
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    setAttrs(e, attrs);
    append(e, kids);
    return e;
  }
  function sv(tag, attrs, ...kids) {
    const e = document.createElementNS(SVGNS, tag);
    setAttrs(e, attrs);
    append(e, kids);
    return e;
  }
  function setAttrs(e, attrs) {
    if (!attrs) return;
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
      else if (k === 'text') e.textContent = String(v);
      else e.setAttribute(k, String(v));
    }
  }
  function append(e, kids) {
    for (const k of kids.flat(Infinity)) {
      if (k === undefined || k === null || k === false) continue;
      e.appendChild(k instanceof Node ? k : document.createTextNode(String(k)));
    }
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); return e; }
  function pre(text, cls) { return el('pre', { class: cls }, text === undefined || text === null ? '' : String(text)); }
  function json(v) { return JSON.stringify(v, null, 1); }
  // a text that is a JSON object or array (e.g. PoS's role messages), indented; null otherwise
  function prettyJson(text) {
    if (typeof text !== 'string') return null;
    const t = text.trim();
    if (!(t.startsWith('{') && t.endsWith('}')) && !(t.startsWith('[') && t.endsWith(']'))) return null;
    try { const v = JSON.parse(t); return v !== null && typeof v === 'object' ? JSON.stringify(v, null, 2) : null; } catch (err) { return null; }
  }
  function textBlock(text, cls) {
    const pj = prettyJson(text);
    return pj === null ? pre(text, cls) : [pre(pj, 'json' + (cls ? ' ' + cls : '')), el('div', { class: 'muted small' }, 'JSON, shown indented')];
  }
  function jsonBlock(label, v, open) {
    const d = el('details', { open: open ? 'open' : null }, el('summary', null, label));
    let filled = false;
    const fill = () => { if (!filled) { filled = true; d.appendChild(pre(json(v))); } };
    if (open) fill(); else d.addEventListener('toggle', fill);
    return d;
  }
  function lazyDetails(summary, build, cls) {
    const d = el('details', { class: cls }, el('summary', null, summary));
    let built = false;
    d.addEventListener('toggle', () => { if (d.open && !built) { built = true; append(d, [build()]); } });
    return d;
  }
  function fmtNum(n) { return n === null || n === undefined ? '–' : Number(n).toLocaleString('en-US'); }
  function fmtPct(x) { return x === null || x === undefined ? '–' : (Math.round(x * 1000) / 10) + '%'; }
  function table(header, rows, rowAttrs) {
    const t = el('table', null, el('thead', null, el('tr', null, header.map(h => el('th', null, h)))));
    const tb = el('tbody');
    rows.forEach((r, i) => tb.appendChild(el('tr', rowAttrs ? rowAttrs(r, i) : null, r.map(c => c instanceof Node ? el('td', null, c) : el('td', null, c === null || c === undefined ? '–' : String(c))))));
    t.appendChild(tb);
    return t;
  }
  function cellLabel(ci) { const c = CELLS[ci]; return c.method + ' · ' + c.benchmark + ' · ' + c.backbone; }
  function color(i) { return PALETTE[i % PALETTE.length]; }
  function encoding(i) {
    const round = Math.floor(i / PALETTE.length);
    return { color: color(i), marker: MARKERS[round % MARKERS.length], dash: DASHES[round % DASHES.length] };
  }
  function marker(kind, x, y, r, attrs, ...kids) {
    if (kind === 'square') return sv('rect', Object.assign({ x: x - r, y: y - r, width: 2 * r, height: 2 * r }, attrs), ...kids);
    if (kind === 'triangle') return sv('path', Object.assign({ d: 'M' + x + ' ' + (y - r * 1.2) + 'L' + (x + r * 1.1) + ' ' + (y + r * 0.8) + 'L' + (x - r * 1.1) + ' ' + (y + r * 0.8) + 'Z' }, attrs), ...kids);
    if (kind === 'diamond') return sv('path', Object.assign({ d: 'M' + x + ' ' + (y - r * 1.3) + 'L' + (x + r * 1.3) + ' ' + y + 'L' + x + ' ' + (y + r * 1.3) + 'L' + (x - r * 1.3) + ' ' + y + 'Z' }, attrs), ...kids);
    return sv('circle', Object.assign({ cx: x, cy: y, r }, attrs), ...kids);
  }

  // ------------------------------------------------------------------ episode payloads (lazy)
  // The episodes' details are zstd blocks of INDEX.chunk episodes each (one JSON line per episode;
  // a row's `payload` is its place: block payload / chunk, line payload % chunk), decoded only
  // when one of them is needed (fzstd): inside the page (a base64 block per script element), or,
  // for a large experiment, in files beside it (INDEX.parts: <report>.files/part-NNNNN.js,
  // INDEX.parts.blocks blocks each), loaded when needed; the last few files and blocks stay loaded.
  const PARTS = INDEX.parts;
  const parts = new Map(), partWaiters = new Map();
  window.__reportPart = (k, payloads) => { const w = partWaiters.get(k); if (w) { partWaiters.delete(k); w(payloads); } };
  function lru(map, k, make, keep) {
    if (map.has(k)) { const p = map.get(k); map.delete(k); map.set(k, p); return p; }  // most recent last
    const p = make();
    map.set(k, p);
    p.catch(() => { if (map.get(k) === p) map.delete(k); });  // a failed load is tried again next time
    while (map.size > keep) map.delete(map.keys().next().value);
    return p;
  }
  function loadPart(k) {
    return lru(parts, k, () => new Promise((resolve, reject) => {
      const s = document.createElement('script');
      s.nonce = PARTS.nonce;
      s.src = PARTS.dir + '/part-' + String(k).padStart(5, '0') + '.js';
      const fail = () => {
        s.remove(); partWaiters.delete(k);
        reject(new Error('the episode details of this report are in the folder ' + PARTS.dir + '/ beside it, and ' + s.src +
          ' could not be read. Fix: keep that folder next to the report (or build the report again: python -m runners.view)'));
      };
      partWaiters.set(k, payloads => { s.remove(); resolve(payloads); });
      s.onload = () => { if (partWaiters.has(k)) fail(); };
      s.onerror = fail;
      document.head.appendChild(s);
    }), 6);
  }
  const blocks = new Map();
  function loadBlock(k) {  // {data: the block's bytes, starts: where each of its lines begins}
    return lru(blocks, k, async () => {
      let b64;
      if (PARTS) b64 = (await loadPart(Math.floor(k / PARTS.blocks)))[k % PARTS.blocks];
      else { const node = document.getElementById('ch-' + k); b64 = node ? node.textContent.trim() : undefined; }
      if (b64 === undefined) throw new Error('block ' + k + ' is not in this report');
      const bin = atob(b64);
      const bytes = new Uint8Array(bin.length);
      for (let q = 0; q < bin.length; q++) bytes[q] = bin.charCodeAt(q);
      const data = fzstd.decompress(bytes), starts = [0];
      for (let q = data.indexOf(10); q >= 0; q = data.indexOf(10, q + 1)) starts.push(q + 1);
      return { data, starts };
    }, 8);
  }
  const utf8 = new TextDecoder();
  async function episodeText(i) {
    const j = EPS[i][F.payload];
    const { data, starts } = await loadBlock(Math.floor(j / INDEX.chunk));
    const m = j % INDEX.chunk;
    if (m >= starts.length) throw new Error('episode ' + i + ' is not in this report');
    return utf8.decode(data.subarray(starts[m], m + 1 < starts.length ? starts[m + 1] - 1 : data.length));
  }
  const cache = new Map();
  async function loadEpisode(i) {
    if (cache.has(i)) return cache.get(i);
    const ep = new Episode(JSON.parse(await episodeText(i)));
    if (cache.size > 50) cache.delete(cache.keys().next().value);
    cache.set(i, ep);
    return ep;
  }

  class Episode {
    constructor(data) {
      this.rec = data.record;
      this.t = data.transcript || { nodes: {}, blobs: {}, missing: [] };
      this.msgCache = new Map();
    }
    calls() {
      const r = this.rec, out = [].concat(r.task_calls || []);
      for (const q of r.requests || []) {
        out.push(...(q.begin_calls || []));
        for (const s of q.steps || []) out.push(...(s.calls || []));
        out.push(...(q.end_calls || []));
      }
      return out.concat(r.unfinished_calls || []);
    }
    hasTranscript() { return this.calls().some(c => c.prompt !== null && c.prompt !== undefined); }
    text(h) {
      if (!h) return null;
      const b = this.t.blobs[h];
      if (!b) throw new Error('transcript missing for ' + h);
      return b[1];
    }
    message(h) {
      if (this.msgCache.has(h)) return this.msgCache.get(h);
      const b = this.t.blobs[h];
      if (!b) throw new Error('transcript missing for ' + h);
      let m;
      if (b[0] === 't') m = JSON.parse(b[1]);
      else if (b[0] === 'j') m = b[1];  // a message embedded as stored JSON (TranscriptReader._form)
      else {
        const base = this.message(b[1]), d = b[2];
        const lines = String(base.content || '').split(/(?<=\n)/).filter(x => x !== '');
        const tail = d.s ? lines.slice(lines.length - d.s) : [];
        m = Object.assign({}, d.m, { content: lines.slice(0, d.p).join('') + d.x + tail.join('') });
      }
      this.msgCache.set(h, m);
      return m;
    }
    messages(head) {
      const path = [];
      let h = head || '';
      while (h) {
        const n = this.t.nodes[h];
        if (!n) throw new Error('transcript missing for prompt ' + h);
        path.push(n);
        h = n[0];
      }
      let out = [];
      for (let k = path.length - 1; k >= 0; k--) {
        const [, take, add, tail] = path[k];
        out = out.slice(0, take).concat(add, tail ? out.slice(out.length - tail) : []);
      }
      return out.map(x => this.message(x));
    }
  }

  // ------------------------------------------------------------------ layout
  const app = document.getElementById('app');
  const tabs = {};
  const nav = el('nav');
  const main = el('main');
  function tab(name, label) {
    const s = el('section', { class: 'tab', id: 'tab-' + name });
    tabs[name] = s;
    nav.appendChild(el('button', { 'data-tab': name, onclick: () => navigate(name === 'episodes' && selected >= 0 ? epHash(selected) : '#' + name) }, label));
    main.appendChild(s);
    return s;
  }
  function show(name) {
    for (const [k, s] of Object.entries(tabs)) s.classList.toggle('active', k === name);
    for (const b of nav.querySelectorAll('button')) b.classList.toggle('active', b.getAttribute('data-tab') === name);
  }
  app.appendChild(el('header', null, el('h1', null, INDEX.experiment), nav,
    el('span', { class: 'meta' }, CELLS.length + ' cells · ' + EPS.length + ' episodes · generated ' + INDEX.generated_at)));
  app.appendChild(main);
  if (INDEX.scripted) main.appendChild(el('div', { class: 'note' }, 'Rows marked [scripted] come from the deterministic scripted backbone: an offline demo, not model results.'));

  // ------------------------------------------------------------------ tables
  const tTables = tab('tables', 'Tables');
  tTables.appendChild(el('h2', null, 'Results (rates in %, Tok = method-side tokens in ' + (INDEX.tok_unit === 'k' ? 'thousands' : 'millions') +
    '; Δ vs ' + INDEX.reference + ')'));
  if (INDEX.reference_note) tTables.appendChild(el('div', { class: 'note' }, INDEX.reference_note));
  // the marks the tables use, each explained in a legend and as a tooltip on the rows that carry it
  const MARK_TESTS = {
    '[lo, hi]': txt => /\[[-+]?[\d.]+, [-+]?[\d.]+\]/.test(txt),
    'method[key=value]': (txt, first) => /^\s*[\w.-]+\[[^\]]*=/.test(first),
    '*': txt => /p=[\d.e+-]+\*/.test(txt),
  };
  function marksIn(first, txt) { return INDEX.marks.filter(([m]) => MARK_TESTS[m] ? MARK_TESTS[m](txt, first) : first.includes(m)); }
  if (INDEX.table.header.length) {
    const t = table(INDEX.table.header, INDEX.table.rows, r => ({ class: String(r[0]).startsWith('  ') ? 'sub' : null }));
    const seen = new Set();
    t.querySelectorAll('tbody tr').forEach((tr, k) => {
      const row = INDEX.table.rows[k].map(String);
      const ms = marksIn(row[0], row.join(' '));
      ms.forEach(([m]) => seen.add(m));
      const own = ms.filter(([m]) => !MARK_TESTS[m]);
      if (own.length) { tr.cells[0].setAttribute('title', own.map(([m, d]) => m + ': ' + d).join('\n')); tr.cells[0].classList.add('marked'); }
    });
    tTables.appendChild(t);
    const shown = INDEX.marks.filter(([m]) => seen.has(m));
    if (shown.length) tTables.appendChild(el('div', { id: 'marks', class: 'marks' }, el('div', { class: 'label' }, 'Marks in this table'),
      el('dl', null, shown.map(([m, d]) => [el('dt', null, m), el('dd', null, d)]))));
  } else tTables.appendChild(el('p', { class: 'muted' }, 'No finished cells.'));
  if (INDEX.depth) {
    tTables.appendChild(el('h2', null, 'Depth retention (Acc_k, nAUC, DR)'));
    tTables.appendChild(table(INDEX.depth.header, INDEX.depth.rows));
    if (INDEX.depth.note) tTables.appendChild(el('p', { id: 'depth-note', class: 'muted small' }, INDEX.depth.note));
  }
  tTables.appendChild(el('h2', null, 'Cells'));
  const cellMarks = c => [c.scripted ? '[scripted]' : null, c.partial ? '[partial]' : null, c.mixed_code ? '[mixed code]' : null,
    c.paraphrased && c.paraphrased.length ? '[paraphrased] ' + c.paraphrased.join(', ') : null,
    c.project_share != null ? 'project wording ' + (100 * c.project_share).toFixed(1) + '% (runners.provenance)' : null].filter(Boolean).join(' ');
  tTables.appendChild(table(['cell', 'method', 'benchmark', 'backbone', 'episodes', 'tokens by role', 'transcripts', 'marks'],
    CELLS.map(c => [c.cell, c.method, c.benchmark, c.backbone, c.n_episodes, Object.entries(c.tokens_by_role).map(([r, n]) => r + ' ' + fmtNum(n)).join(', '), c.transcripts ? 'yes' : 'no transcript recorded', cellMarks(c)])));

  // ------------------------------------------------------------------ paper (python -m runners.paper, the same artefacts)
  const tPaper = tab('paper', 'Paper');
  const PAPER = INDEX.paper || { artefacts: [] };
  if (PAPER.figures_note) tPaper.appendChild(el('div', { class: 'note' }, PAPER.figures_note));
  function shortList(text) {  // "a; b; …" cut to six items and the count (claims.csv has them all)
    const xs = text ? text.split('; ') : [];
    return xs.length > 6 ? xs.slice(0, 6).join('; ') + '; … (' + xs.length + ' in all)' : text;
  }
  if (PAPER.claims && PAPER.claims.length) {  // paper/claims.md: each claim on the paper's tables and on ours
    tPaper.appendChild(el('h2', null, "The papers' claims, checked"));
    tPaper.appendChild(table(['claim', 'where', 'paper states', 'paper recomputed', 'ours', 'verdict', 'missing cells', 'marks'],
      PAPER.claims.map(c => [c.claim + ' (' + c.id + ')', c.paper + ' ' + c.where, c.paper_quoted, c.paper_recomputed,
        c.ours + (c.detail ? ' (' + c.detail + ')' : ''), c.verdict, shortList(c.missing), c.marks])));
  }
  tPaper.appendChild(el('h2', null, 'Artefacts'));
  tPaper.appendChild(table(['artefact', 'status', 'missing / how to produce'], PAPER.artefacts.map(a => [a.name + ': ' + a.title, a.status,
    a.status === 'produced' ? '' : (a.status === 'partial' ? 'missing: ' + a.missing.slice(0, 8).join('; ') + (a.missing.length > 8 ? '; …' : '') : a.preset)])));
  function paperTable(t) {
    const w = t.header.length;
    const tb = el('tbody');
    t.rows.forEach(r => {
      if (r.kind === 'group') { tb.appendChild(el('tr', { class: 'group' }, el('td', { colspan: w }, r.label))); return; }
      const cells = r.cells.map((c, j) => {
        const s = (r.styles || [])[j];
        return el('td', null, s === 'best' ? el('b', null, c) : (s === 'second' ? el('u', null, c) : c));
      });
      tb.appendChild(el('tr', { class: r.kind === 'ours' ? null : 'sub' }, el('td', null, r.label), el('td', null, r.backbone), cells));
    });
    const spans = (t.spans || []).map(level => el('tr', null, [el('th', { colspan: 2 }, '')].concat(
      level.map(([text, n]) => el('th', { colspan: n, class: text ? 'span' : null }, text)))));
    const head = spans.length && t.short && t.short.length ? t.short : t.header;
    return el('table', null, el('thead', null, spans.concat([el('tr', null, head.map(h => el('th', null, h)))])), tb);
  }
  PAPER.artefacts.filter(a => a.status !== 'not produced').forEach(a => {
    const box = el('div', { class: 'paper-art', id: 'paper-' + a.name }, el('h2', null, a.title + ' (' + a.status + ')'));
    if (a.table) {
      box.appendChild(paperTable(a.table));
      a.table.notes.forEach(n => box.appendChild(el('p', { class: 'muted' }, n)));
    }
    if (a.svg) box.appendChild(el('img', { src: a.svg, alt: a.title, class: 'paper-fig' }));
    tPaper.appendChild(box);
  });
  if (PAPER.headlines) {
    tPaper.appendChild(el('h2', null, "Headlines (computed the papers' way, beside the papers')"));
    tPaper.appendChild(pre(PAPER.headlines));
  }

  // ------------------------------------------------------------------ plots
  // Round tick values (1, 2, 2.5 or 5 × a power of ten) spanning [lo, hi]: the axis is widened to the outer ticks.
  function niceTicks(lo, hi, n) {
    if (!(hi > lo)) hi = lo + 1;
    const raw = (hi - lo) / (n || 4), p = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / p;
    const st = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * p;
    const a = Math.floor(lo / st + 1e-9), b = Math.ceil(hi / st - 1e-9), out = [];
    for (let k = a; k <= b; k++) out.push(Number((k * st).toPrecision(12)));
    return out;
  }
  function frame(w, h, m, xr, yr, xlabel, ylabel, xticks) {
    const g = sv('svg', { width: w, height: h, viewBox: '0 0 ' + w + ' ' + h, role: 'img', class: 'chart' });
    const yt = niceTicks(yr[0], yr[1]), xt = xticks ? niceTicks(xr[0], xr[1]) : null;
    yr = [yt[0], yt[yt.length - 1]];
    if (xt) xr = [xt[0], xt[xt.length - 1]];
    const X = x => m.l + (xr[1] === xr[0] ? 0.5 : (x - xr[0]) / (xr[1] - xr[0])) * (w - m.l - m.r);
    const Y = y => h - m.b - (yr[1] === yr[0] ? 0.5 : (y - yr[0]) / (yr[1] - yr[0])) * (h - m.t - m.b);
    for (const yv of yt) {
      g.appendChild(sv('line', { class: 'grid', x1: m.l, x2: w - m.r, y1: Y(yv), y2: Y(yv) }));
      g.appendChild(sv('text', { x: m.l - 4, y: Y(yv) + 3, 'text-anchor': 'end', class: 'ytick' }, shortNum(yv)));
    }
    if (xt) {
      xt.forEach((xv, k) => {
        g.appendChild(sv('line', { class: 'axis', x1: X(xv), x2: X(xv), y1: h - m.b, y2: h - m.b + 4 }));
        g.appendChild(sv('text', { x: X(xv), y: h - m.b + 15, 'text-anchor': k === 0 ? 'start' : k === xt.length - 1 ? 'end' : 'middle', class: 'xtick' }, shortNum(xv)));
      });
    }
    g.appendChild(sv('line', { class: 'axis', x1: m.l, x2: w - m.r, y1: h - m.b, y2: h - m.b }));
    g.appendChild(sv('line', { class: 'axis', x1: m.l, x2: m.l, y1: m.t, y2: h - m.b }));
    g.appendChild(sv('text', { x: (m.l + w - m.r) / 2, y: h - 4, 'text-anchor': 'middle' }, xlabel));
    g.appendChild(sv('text', { x: 12, y: (m.t + h - m.b) / 2, transform: 'rotate(-90 12 ' + ((m.t + h - m.b) / 2) + ')', 'text-anchor': 'middle' }, ylabel));
    return { g, X, Y };
  }
  function shortNum(v) {
    const a = Math.abs(v), one = x => x.toFixed(1).replace(/\.0$/, '');
    if (a >= 1e6) return one(v / 1e6) + 'M';
    if (a >= 1e3) return one(v / 1e3) + 'k';
    return (Math.round(v * 100) / 100).toString();
  }
  function swatch(i, lines) {
    const e = encoding(i);
    return sv('svg', { width: 26, height: 12, class: 'sw', 'aria-hidden': 'true' },
      lines ? sv('line', { x1: 1, x2: 25, y1: 6, y2: 6, stroke: e.color, 'stroke-width': 2, 'stroke-dasharray': e.dash }) : null,
      marker(e.marker, 13, 6, 4, { fill: e.color }));
  }
  function legend(names, lines, more) {
    return el('div', { class: 'legend' }, names.map((n, i) => el('span', { class: 'entry' }, swatch(i, lines), n)),
      more ? el('span', { class: 'muted' }, ' … and ' + more + ' more (hover a point for its name)') : null);
  }
  function roleLegend(names) { return el('div', { class: 'legend' }, names.map((n, i) => el('span', { class: 'entry' }, el('span', { class: 'box', style: 'background:' + color(i) }), n))); }
  function plotBox(title, svgNode, legendNode, id) { return el('div', { class: 'plot', id }, el('h3', null, title), svgNode, legendNode); }

  function lineChart(series, xlabel, ylabel, yMax, threshold) {
    const pts = series.flatMap(s => s.points);
    const xs = pts.map(p => p[0]), ys = pts.map(p => p[1]);
    const xr = [Math.min(...xs, 1), Math.max(...xs, 1)], yr = [0, yMax !== undefined ? yMax : Math.max(...ys, 1)];
    const { g, X, Y } = frame(460, 260, { l: 48, r: 12, t: 10, b: 34 }, xr, yr, xlabel, ylabel);
    const stride = Math.max(1, Math.ceil((xr[1] - xr[0] + 1) / 12));
    for (let k = Math.ceil(xr[0]); k <= xr[1]; k += stride) g.appendChild(sv('text', { x: X(k), y: 260 - 20, 'text-anchor': 'middle', class: 'xtick' }, k));
    if (threshold !== null && threshold !== undefined) g.appendChild(sv('line', { x1: X(xr[0]), x2: X(xr[1]), y1: Y(threshold), y2: Y(threshold), stroke: '#999', 'stroke-dasharray': '4 3' }));
    series.forEach((s, i) => {
      const ok = s.points.filter(p => p[1] !== null && p[1] !== undefined);
      const e = encoding(i);
      if (ok.length > 1) g.appendChild(sv('polyline', { fill: 'none', stroke: e.color, 'stroke-width': 2, 'stroke-dasharray': e.dash, points: ok.map(p => X(p[0]) + ',' + Y(p[1])).join(' ') }));
      ok.forEach(p => g.appendChild(marker(e.marker, X(p[0]), Y(p[1]), 3, { fill: e.color }, sv('title', null, s.name + ': ' + p[0] + ', ' + shortNum(p[1])))));
    });
    return g;
  }

  const tPlots = tab('plots', 'Plots');
  const plots = el('div', { class: 'plots' });
  tPlots.appendChild(plots);
  (function drawPlots() {
    // the curves benchmarks declare (MetricSpec.curve), one line per cell
    for (const cv of INDEX.curves) {
      const lines = CELLS.map((c, i) => ({ name: cellLabel(i), points: (c.curves[cv.name] || []).map((a, k) => [k + 1, a]) })).filter(s => s.points.length);
      if (lines.length) plots.appendChild(plotBox(cv.name + ' by method (over ' + cv.axis + ')', lineChart(lines, cv.axis, cv.name + (cv.percent ? ' (%)' : ''), cv.percent ? 100 : undefined), legend(lines.map(s => s.name), true), 'plot-' + cv.id));
    }
    // #Tok by method, stacked by role
    const roles = [...new Set(CELLS.flatMap(c => Object.keys(c.tokens_by_role)))].sort((a, b) => (METHOD_ROLES.indexOf(a) + 1 || 99) - (METHOD_ROLES.indexOf(b) + 1 || 99));
    if (roles.length) {
      // one horizontal bar per cell, so that any number of cells fits the page's width
      const totals = CELLS.map(c => roles.reduce((s, r) => s + (c.tokens_by_role[r] || 0), 0));
      const lab = 300, w = 760, rowH = 22, top = 8, h = top + rowH * CELLS.length + 40;
      const g = sv('svg', { width: w, height: h, viewBox: '0 0 ' + w + ' ' + h, role: 'img', class: 'chart' });
      const ticks = niceTicks(0, Math.max(...totals, 1)), maxT = ticks[ticks.length - 1];
      const X = v => lab + v / maxT * (w - lab - 20);
      ticks.forEach((v, k) => {
        g.appendChild(sv('line', { class: 'grid', x1: X(v), x2: X(v), y1: top, y2: h - 32 }));
        g.appendChild(sv('text', { x: X(v), y: h - 18, 'text-anchor': k === 0 ? 'start' : k === ticks.length - 1 ? 'end' : 'middle', class: 'xtick' }, shortNum(v)));
      });
      g.appendChild(sv('text', { x: (lab + w - 20) / 2, y: h - 3, 'text-anchor': 'middle' }, 'method tokens'));
      CELLS.forEach((c, i) => {
        const y = top + i * rowH;
        const name = cellLabel(i);
        g.appendChild(sv('text', { x: lab - 6, y: y + rowH / 2 + 4, 'text-anchor': 'end' }, name.length > 48 ? name.slice(0, 47) + '…' : name, sv('title', null, name + ' (' + c.cell + ')')));
        let acc0 = 0;
        roles.forEach((r, ri) => {
          const v = c.tokens_by_role[r] || 0;
          if (!v) return;
          g.appendChild(sv('rect', { x: X(acc0), width: Math.max(0.5, X(acc0 + v) - X(acc0)), y: y + 3, height: rowH - 6, fill: color(ri) }, sv('title', null, name + ' · ' + r + ': ' + fmtNum(v))));
          acc0 += v;
        });
      });
      g.appendChild(sv('line', { class: 'axis', x1: lab, x2: lab, y1: top, y2: h - 32 }));
      plots.appendChild(plotBox('#Tok by method, split by role (judge and user simulator are not method tokens)', g, roleLegend(roles), 'plot-tok'));
    }
    // success vs tokens
    const pts = EPS.slice(0, INDEX.max_scatter).map((e, i) => [i, e]).filter(([, e]) => e[F.success] !== null && e[F.success] !== undefined);
    if (pts.length) {
      const xs = pts.map(([, e]) => e[F.tokens]);
      const { g, X, Y } = frame(520, 280, { l: 48, r: 16, t: 10, b: 40 }, [0, Math.max(...xs, 1)], [0, 1], 'method tokens per episode', 'success', true);
      pts.forEach(([i, e]) => {
        const jitter = ((i * 7919) % 13 - 6) / 300;
        const enc = encoding(e[F.cell]);
        const c = marker(enc.marker, X(e[F.tokens]), Y(Math.min(1, Math.max(0, e[F.success] + jitter))), 3.5, { fill: enc.color, 'fill-opacity': 0.7, 'data-ep': i, class: 'click', onclick: () => openEpisode(i) });
        c.appendChild(sv('title', null, cellLabel(e[F.cell]) + ' · ' + e[F.task_id] + ' #' + e[F.trial] + ': success ' + e[F.success] + ', ' + fmtNum(e[F.tokens]) + ' tokens'));
        g.appendChild(c);
      });
      plots.appendChild(plotBox('Success vs tokens per episode (click a point to open it)', g, legend(CELLS.map((c, i) => cellLabel(i)), false), 'plot-scatter'));
    }
    // the per-step series methods declare (Method.step_series), one line per episode
    for (const decl of INDEX.series) {
      const series = decl.lines.map(([i, vs]) => ({ name: EPS[i][F.task_id] + ' #' + EPS[i][F.trial] + ' (' + CELLS[EPS[i][F.cell]].method + ')', points: vs.map((v, k) => [k + 1, v]) }));
      const g = lineChart(series, 'step', decl.axis, decl.high === null ? undefined : decl.high, decl.threshold);
      plots.appendChild(plotBox(decl.title, g, legend(series.slice(0, 12).map(s => s.name), true, Math.max(0, series.length - 12)), 'plot-' + decl.name));
    }
    if (!plots.firstChild) plots.appendChild(el('p', { class: 'muted' }, 'Nothing to plot yet.'));
  })();

  // ------------------------------------------------------------------ episode browser
  const tEps = tab('episodes', 'Episodes');
  const uniq = a => [...new Set(a)];
  function select(id, label, options, onchange) {
    const s = el('select', { id, onchange });
    for (const [v, t] of options) s.appendChild(el('option', { value: v }, t));
    return el('label', null, label + ' ', s);
  }
  const fCell = select('f-cell', 'cell', [['', 'all']].concat(CELLS.map((c, i) => [String(i), cellLabel(i)])), () => {  // a cell is a place too
    const v = fCell.querySelector('select').value;
    refresh(0);
    navigate(v === '' ? '#episodes' : '#episodes/' + enc(CELLS[Number(v)].cell));
  });
  const fMethod = select('f-method', 'method', [['', 'all']].concat(uniq(CELLS.map(c => c.method)).map(m => [m, m])), () => refresh(0));
  const fBench = select('f-bench', 'benchmark', [['', 'all']].concat(uniq(CELLS.map(c => c.benchmark)).map(m => [m, m])), () => refresh(0));
  const fOutcome = select('f-outcome', 'outcome', [['', 'all'], ['failed', 'failed only'], ['errors', 'errors only'], ['success', 'succeeded']], () => refresh(0));
  const fStatus = select('f-status', 'status', [['', 'all']].concat(uniq(EPS.map(e => e[F.status])).map(x => [x, x])), () => refresh(0));
  const fTask = el('input', { id: 'f-task', placeholder: 'task id contains…', oninput: () => refresh(0) });
  const fText = el('input', { id: 'f-text', type: 'search', placeholder: 'text in messages or replies…', onkeydown: ev => { if (ev.key === 'Enter') runTextSearch(); } });
  const textProgress = el('span', { class: 'muted', id: 'text-progress' });
  const count = el('span', { class: 'muted', id: 'ep-count' });
  tEps.appendChild(el('div', { class: 'filters' }, fCell, fMethod, fBench, fOutcome, fStatus, fTask, count));
  tEps.appendChild(el('div', { class: 'filters' }, fText, el('button', { id: 'f-text-go', onclick: () => runTextSearch() }, 'search text'),
    el('button', { id: 'f-text-clear', onclick: () => { fText.value = ''; runTextSearch(); } }, 'clear'), textProgress));
  const listBox = el('div', { id: 'ep-list' });
  const pager = el('div', { class: 'pager' });
  const detail = el('div', { id: 'ep-detail' });
  tEps.appendChild(listBox);
  tEps.appendChild(pager);
  tEps.appendChild(detail);
  const PAGE = 100;
  let page = 0, selected = -1;
  function matches(withText = true) {
    const c = fCell.querySelector('select').value, m = fMethod.querySelector('select').value, b = fBench.querySelector('select').value;
    const o = fOutcome.querySelector('select').value, q = fTask.value.trim().toLowerCase(), st = fStatus.querySelector('select').value;
    const out = [];
    for (let i = 0; i < EPS.length; i++) {
      const e = EPS[i], cell = CELLS[e[F.cell]];
      if (c && String(e[F.cell]) !== c) continue;
      if (m && cell.method !== m) continue;
      if (b && cell.benchmark !== b) continue;
      const err = e[F.status] !== 'ok', ok = !err && e[F.success] !== null && e[F.success] >= 1;
      if (o === 'errors' && !err) continue;
      if (o === 'failed' && ok) continue;
      if (o === 'success' && !ok) continue;
      if (q && !String(e[F.task_id]).toLowerCase().includes(q)) continue;
      if (st && e[F.status] !== st) continue;
      if (withText && text.query && !(text.hits.get(i) >= 0)) continue;
      out.push(i);
    }
    return out;
  }
  function refresh(p, fromSearch) {
    page = p;
    if (!fromSearch && text.query) runTextSearch(true);  // the other filters changed: search the episodes they now select
    const m = matches();
    count.textContent = m.length + ' of ' + EPS.length + ' episodes';
    const rows = m.slice(page * PAGE, (page + 1) * PAGE);
    const hitAt = i => (text.query && text.hits.get(i) > 0 ? text.hits.get(i) : undefined);
    clear(listBox).appendChild(table(['cell', 'task', 'trial', 'status', 'success', 'method tokens', 'steps', 'calls', 'transcript'].concat(text.query ? ['text found'] : []),
      rows.map(i => { const e = EPS[i]; return [cellLabel(e[F.cell]), e[F.task_id], e[F.trial], e[F.status], e[F.success] === null ? '–' : e[F.success], fmtNum(e[F.tokens]), e[F.steps], e[F.calls], e[F.transcript] ? 'yes' : 'none'].concat(text.query ? [hitAt(i) ? 'step ' + hitAt(i) : 'outside the steps'] : []); }),
      (r, k) => ({ class: 'click' + (rows[k] === selected ? ' selected' : ''), 'data-ep': rows[k], onclick: () => openEpisode(rows[k], hitAt(rows[k])) })));
    clear(pager);
    const pages = Math.ceil(m.length / PAGE);
    if (pages > 1) {  // any page in one step: a list of 100,000 episodes is 1,000 pages
      const go = p => refresh(Math.min(pages - 1, Math.max(0, p)));
      const first = page === 0 ? 'disabled' : null, last = page >= pages - 1 ? 'disabled' : null;
      pager.appendChild(el('button', { id: 'page-first', onclick: () => go(0), disabled: first }, '« first'));
      pager.appendChild(el('button', { id: 'page-prev', onclick: () => go(page - 1), disabled: first }, '‹ prev'));
      pager.appendChild(el('label', null, 'page ', el('input', { id: 'page-no', type: 'number', min: 1, max: pages, value: page + 1,
        onchange: ev => go(Math.round(Number(ev.target.value) || 1) - 1) }), ' / ' + pages));
      pager.appendChild(el('button', { id: 'page-next', onclick: () => go(page + 1), disabled: last }, 'next ›'));
      pager.appendChild(el('button', { id: 'page-last', onclick: () => go(pages - 1), disabled: last }, 'last »'));
    }
  }

  // ---------------------------------------------------------------- text search
  // The texts live in the per-episode compressed payloads, so the search decodes them on demand,
  // in the background: episodes are searched one after another, yielding to the page every ~30 ms
  // (it stays responsive; progress is shown), a new query or filter cancels the run in flight, and
  // results are kept per query so that changing a filter searches only the episodes not yet seen.
  // A cheap test on the decoded payload's raw text skips episodes that cannot contain the words.
  const text = { query: '', hits: new Map(), gen: 0 };
  function textOf(v) { return v === null || v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v); }
  function findText(ep, q) {
    // the step (1-based, in episode order) where q first occurs; 0: only outside the steps; -1: nowhere
    const has = t => t && String(t).toLowerCase().includes(q);
    const seen = new Set();
    const inCall = c => {
      if (c.prompt !== null && c.prompt !== undefined) {
        for (const m of ep.messages(c.prompt)) {
          if (seen.has(m)) continue;
          seen.add(m);
          if (has(textOf(m.content)) || (m.tool_calls && has(JSON.stringify(m.tool_calls)))) return true;
        }
      }
      return [c.reply, c.reasoning, c.reply_tool_calls].some(h => h && has(ep.text(h)));
    };
    const r = ep.rec;
    let n = 0, outside = false;
    if ((r.task_calls || []).some(c => { try { return inCall(c); } catch (err) { return false; } })) outside = true;
    for (const q2 of r.requests || []) {
      if (has(q2.request && q2.request.text)) outside = true;
      try { if ((q2.begin_calls || []).some(inCall)) outside = true; } catch (err) { /* transcript missing */ }
      for (const s of q2.steps || []) {
        n++;
        if (has(obsText(s.observation)) || has(textOf(s.decision && s.decision.message))) return n;
        try { if ((s.calls || []).some(inCall)) return n; } catch (err) { /* transcript missing */ }
      }
      try { if ((q2.end_calls || []).some(inCall)) outside = true; } catch (err) { /* transcript missing */ }
    }
    return outside ? 0 : -1;
  }
  async function runTextSearch(keep) {
    const q = fText.value.trim().toLowerCase();
    const gen = ++text.gen;
    if (!q) { text.query = ''; text.hits = new Map(); textProgress.textContent = ''; tEps.removeAttribute('data-search-done'); refresh(0, true); return; }
    if (q !== text.query) { text.query = q; text.hits = new Map(); }
    tEps.removeAttribute('data-search-done');
    const todo = matches(false).filter(i => !text.hits.has(i));
    const rawOk = /^[\x20-\x7e]*$/.test(q) && !/["\\]/.test(q);  // such a query appears verbatim in the payload's JSON
    let t0 = performance.now(), done = 0;
    refresh(keep ? page : 0, true);
    for (const i of todo) {
      if (gen !== text.gen) return;  // superseded
      let hit = -1;
      try {
        const raw = cache.has(i) ? null : await episodeText(i);
        if (raw === null || !rawOk || raw.toLowerCase().includes(q)) hit = findText(raw === null ? cache.get(i) : new Episode(JSON.parse(raw)), q);
      } catch (err) { hit = -1; }
      if (gen !== text.gen) return;
      text.hits.set(i, hit);
      done++;
      if (performance.now() - t0 > 30) {
        textProgress.textContent = 'searching… ' + done + ' / ' + todo.length + ' episodes';
        refresh(page, true);
        await new Promise(res => setTimeout(res, 0));
        t0 = performance.now();
      }
    }
    const found = matches().length;
    textProgress.textContent = '"' + fText.value.trim() + '": found in ' + found + ' episode' + (found === 1 ? '' : 's');
    refresh(keep ? page : 0, true);
    tEps.setAttribute('data-search-done', q);
  }

  // ---------------------------------------------------------------- places in the URL
  // #tables, #plots, #compare, #episodes, #episodes/<cell> (its episodes listed),
  // #episodes/<cell>/<task id>/<trial>[/step/<n>] (n: the
  // step's position in the episode, from 1). Every navigation sets the fragment, so back/forward
  // and a URL sent to a colleague open the same place.
  const enc = encodeURIComponent;
  function epHash(i, n) {
    const e = EPS[i];
    return '#episodes/' + enc(CELLS[e[F.cell]].cell) + '/' + enc(e[F.task_id]) + '/' + enc(e[F.trial]) + (n ? '/step/' + n : '');
  }
  function navigate(h) { if (location.hash === h) route(); else location.hash = h; }
  function openEpisode(i, n) { navigate(epHash(i, n)); }
  function findEpisode(cell, task, trial) {
    return EPS.findIndex(e => CELLS[e[F.cell]].cell === cell && String(e[F.task_id]) === task && String(e[F.trial]) === trial);
  }
  let routeGen = 0, quietStep = null;
  async function route() {
    const gen = ++routeGen;
    const parts = location.hash.replace(/^#/, '').split('/').map(x => { try { return decodeURIComponent(x); } catch (err) { return x; } });
    const name = tabs[parts[0]] ? parts[0] : 'tables';
    show(name);
    if (name === 'episodes' && parts.length === 2) {  // #episodes/<cell>: that cell's episodes
      const ci = CELLS.findIndex(c => c.cell === parts[1]);
      const sel = fCell.querySelector('select');
      if (ci >= 0 && sel.value !== String(ci)) { sel.value = String(ci); refresh(0); }
      if (ci < 0) clear(detail).appendChild(el('div', { class: 'errnote', id: 'not-found' }, 'this report has no cell ' + parts[1]));
      return;
    }
    if (name === 'compare' && parts.length >= 4) {  // #compare/<cell A>/<cell B>/<task#trial>[/step/<n>]
      const a = CELLS.findIndex(c => c.cell === parts[1]), b = CELLS.findIndex(c => c.cell === parts[2]);
      if (a < 0 || b < 0) { clear(cmpOut).appendChild(el('div', { class: 'errnote', id: 'not-found' }, 'this report has no cell ' + (a < 0 ? parts[1] : parts[2]))); return; }
      cmpA.querySelector('select').value = String(a);
      cmpB.querySelector('select').value = String(b);
      fillTasks();
      cmpT.value = parts[3];
      await compare(parts[4] === 'step' ? Number(parts[5]) : null);
      return;
    }
    if (name !== 'episodes' || parts.length < 4) return;
    const i = findEpisode(parts[1], parts[2], parts[3]);
    if (i < 0) {
      clear(detail).appendChild(el('div', { class: 'errnote', id: 'not-found' }, 'this report has no episode ' + parts.slice(1, 4).join(' / ') + ' (the link may be from another run)'));
      detail.removeAttribute('data-loaded');
      return;
    }
    const n = parts[4] === 'step' ? Number(parts[5]) : null;
    // an episode's own place shows it afresh (steps closed); a step of the episode on the page only opens that step
    if (detail.getAttribute('data-loaded') !== String(i) || n === null) await showEpisode(i);
    if (gen !== routeGen) return;
    openStep(n, quietStep !== n);
    quietStep = null;
  }
  function openStep(n, scroll) {
    for (const d of detail.querySelectorAll('details.step.target')) d.classList.remove('target');
    detail.setAttribute('data-step', n || '');
    if (!n) { if (scroll) detail.scrollIntoView({ block: 'start' }); return; }
    const d = detail.querySelector('details.step[data-n="' + n + '"]');
    if (!d) { detail.insertBefore(el('div', { class: 'errnote', id: 'not-found' }, 'this episode has no step ' + n), detail.firstChild); return; }
    d.classList.add('target');
    for (let a = d; a && a !== detail; a = a.parentElement) if (a.tagName === 'DETAILS') a.open = true;
    if (scroll) d.scrollIntoView({ block: 'start' });
  }
  window.addEventListener('hashchange', () => route());

  let showGen = 0;
  async function showEpisode(i) {
    const gen = ++showGen;
    selected = i;
    for (const tr of listBox.querySelectorAll('tr.click')) tr.classList.toggle('selected', tr.getAttribute('data-ep') === String(i));
    detail.removeAttribute('data-loaded');
    clear(detail).appendChild(el('p', { class: 'muted' }, 'loading…'));
    let ep;
    try { ep = await loadEpisode(i); } catch (err) { if (gen === showGen) clear(detail).appendChild(el('div', { class: 'errnote' }, 'could not load this episode: ' + err)); return; }
    if (gen !== showGen) return;
    clear(detail).appendChild(renderEpisode(ep, EPS[i]));
    detail.setAttribute('data-loaded', String(i));
  }

  function obsText(o) {
    if (!o) return '(empty)';
    const parts = [];
    for (const r of o.tool_results || []) parts.push('[' + (r.call_id || '') + '] ' + r.name + (r.error ? ' -> ERROR: ' : ' -> ') + r.content);
    if (o.note) parts.push(o.note);
    if (o.user_message !== null && o.user_message !== undefined) parts.push('User: ' + o.user_message);
    return parts.length ? parts.join('\n') : '(empty)';
  }
  function decisionSummary(d) {
    if (!d) return '';
    const tc = (d.tool_calls || []).map(c => c.name + '(' + JSON.stringify(c.arguments) + ')').join(', ');
    const msg = d.message !== null && d.message !== undefined ? 'message: ' + String(d.message).slice(0, 120) : '';
    return [tc, msg].filter(Boolean).join(' · ') || '(no action)';
  }
  function usageText(u) { return u ? fmtNum(u.prompt_tokens) + ' in / ' + fmtNum(u.completion_tokens) + ' out' + (u.source === 'estimated' ? ' (est.)' : '') : ''; }

  function renderCall(ep, c, where) {
    const head = [c.role, c.model, usageText(c.usage), 'finish ' + (c.finish_reason || '–'), c.cached ? 'cache hit' : null,
      (c.latency_s || 0).toFixed(3) + ' s', 'attempt ' + (c.attempt || 0), c.retries && c.retries.length ? c.retries.length + ' retries' : null, where].filter(Boolean).join(' · ');
    return lazyDetails(head, () => {
      const box = el('div', { class: 'call' });
      if (c.error) box.appendChild(el('div', { class: 'errnote' }, c.error));
      if (c.retries && c.retries.length) box.appendChild(jsonBlock('retries', c.retries));
      if (c.prompt === null || c.prompt === undefined) {
        box.appendChild(el('div', { class: 'note' }, 'no transcript recorded for this call (written before transcripts existed, or with runner.transcripts=false)'));
        return box;
      }
      box.appendChild(jsonBlock('sampling', c.sampling || {}));
      try {
        if (c.tools) box.appendChild(jsonBlock('tool schemas', JSON.parse(ep.text(c.tools))));
        const msgs = ep.messages(c.prompt);
        box.appendChild(el('div', { class: 'label' }, 'context the model saw (' + msgs.length + ' messages)'));
        for (const m of msgs) {
          const rest = Object.assign({}, m);
          delete rest.content; delete rest.role;
          box.appendChild(el('div', { class: 'msg' }, el('span', { class: 'role' }, m.role), Object.keys(rest).length ? ' ' + JSON.stringify(rest) : '',
            typeof m.content === 'string' ? textBlock(m.content) : pre(json(m.content))));
        }
        box.appendChild(el('div', { class: 'label' }, 'raw reply'));
        const replyText = c.reply ? ep.text(c.reply) : null;
        box.appendChild(pre(replyText === null ? '(no reply: the call failed)' : replyText, 'reply'));
        const pj = prettyJson(replyText);
        if (pj !== null) append(box, [el('div', { class: 'label' }, 'the reply as JSON, indented'), pre(pj, 'json')]);
        if (c.reply_tool_calls) { box.appendChild(el('div', { class: 'label' }, 'native tool calls in the reply')); box.appendChild(pre(json(JSON.parse(ep.text(c.reply_tool_calls))))); }
        if (c.reasoning) { box.appendChild(el('div', { class: 'label' }, 'reasoning_content')); box.appendChild(pre(ep.text(c.reasoning))); }
      } catch (err) {
        box.appendChild(el('div', { class: 'errnote' }, 'transcript missing: ' + err.message));
      }
      return box;
    }, 'calld');
  }
  function renderCalls(ep, calls, where) { return calls && calls.length ? el('div', null, el('div', { class: 'label' }, where + ' calls'), calls.map(c => renderCall(ep, c, where))) : null; }

  function renderStep(ep, s, n) {
    const m = s.method || {};
    const perrs = m.protocol_errors || [];
    const toks = (s.calls || []).reduce((a, c) => a + (c.usage ? c.usage.prompt_tokens + c.usage.completion_tokens : 0), 0);
    const sum = 'step ' + n + ' · t=' + s.t + ' · ' + decisionSummary(s.decision) + ' · ' + (s.calls || []).length + ' calls, ' + fmtNum(toks) + ' tokens' + (perrs.length ? ' · ⚠ ' + perrs.length + ' protocol error(s)' : '');
    const d = lazyDetails(sum, () => el('div', null,
      el('div', { class: 'label' }, 'observation (what the method was given)'), pre(obsText(s.observation)),
      renderCalls(ep, s.calls, 'step'),
      el('div', { class: 'label' }, 'parsed decision'), pre(json(s.decision)),
      perrs.length ? [el('div', { class: 'label bad' }, 'protocol errors'), pre(json(perrs), 'bad')] : null,
      jsonBlock('method log', m)), 'step' + (perrs.length ? ' haserr' : ''));
    d.setAttribute('data-t', s.t);
    d.setAttribute('data-n', n);
    d.addEventListener('toggle', () => {  // an opened step becomes the place in the URL
      if (!d.open || selected < 0 || detail.getAttribute('data-loaded') !== String(selected)) return;
      const h = epHash(selected, n);
      if (location.hash !== h) { quietStep = n; location.hash = h; }
    });
    return d;
  }

  function renderEpisode(ep, row) {
    const r = ep.rec;
    const box = el('div', { class: 'episode' });
    box.appendChild(el('h2', null, r.task_id + ' · trial ' + r.trial + ' · ' + cellLabel(row[F.cell])));
    box.appendChild(el('p', null, 'status ', el('b', { class: r.status === 'ok' ? 'ok' : 'bad' }, r.status), ' · success ' + (row[F.success] === null ? '–' : row[F.success]) +
      ' · ' + fmtNum(row[F.tokens]) + ' method tokens · ' + r.cache_hits + ' cache hits · ' + r.retries + ' retries · ' + (r.wall_s || 0).toFixed(2) + ' s'));
    if (r.error) box.appendChild(el('div', { class: 'errnote' }, pre(r.error)));
    if (!ep.hasTranscript()) box.appendChild(el('div', { class: 'note', id: 'no-transcript' }, 'no transcript recorded: this episode was written before transcripts existed (or with runner.transcripts=false); decisions, observations and usage are shown, the messages and raw replies are not.'));
    if (ep.t.missing && ep.t.missing.length) box.appendChild(el('div', { class: 'errnote' }, 'transcript missing for ' + ep.t.missing.length + ' stored piece(s) (the cell\'s transcripts.sqlite was replaced or damaged)'));
    box.appendChild(table(['role', 'calls', 'prompt tokens', 'completion tokens'], Object.entries(r.usage_by_role || {}).map(([k, u]) => [k, (r.calls_by_role || {})[k], fmtNum(u.prompt_tokens), fmtNum(u.completion_tokens)])));
    box.appendChild(jsonBlock('scores', r.scores));
    const views = methodViews(ep, row);
    if (views) box.appendChild(views);
    append(box, [renderCalls(ep, r.task_calls, 'task')]);
    let stepNo = 0;
    (r.requests || []).forEach((q, k) => {
      const outcome = q.outcome || {};
      const d = el('details', { open: 'open', class: 'request' }, el('summary', null, 'Request ' + (k + 1) + ': ' + q.request.request_id + ' · ' + (q.steps || []).length + ' steps' + (outcome.truncated ? ' · truncated at the budget' : '')));
      d.appendChild(el('div', { class: 'label' }, 'request'));
      d.appendChild(el('div', null, textBlock(q.request.text)));
      append(d, [renderCalls(ep, q.begin_calls, 'begin'), (q.steps || []).map(s => renderStep(ep, s, ++stepNo)), renderCalls(ep, q.end_calls, 'end')]);
      d.appendChild(jsonBlock('outcome', outcome));
      if (q.method && Object.keys(q.method).length) d.appendChild(jsonBlock('request-boundary method log', q.method));
      box.appendChild(d);
    });
    append(box, [renderCalls(ep, r.unfinished_calls, 'unfinished')]);
    return box;
  }

  // ------------------------------------------------------------------ method views
  // Each cell carries its method's declared views (Method.step_views, runners/api/_views.py); a
  // path names a value in a step's method log, with the same rule as runners.api.read_path.
  function readPath(log, path) {
    if (Array.isArray(path)) {
      for (const p of path) { const v = readPath(log, p); if (v !== null) return v; }
      return null;
    }
    return readKeys(log, path ? String(path).split('.') : []);
  }
  function readKeys(v, keys) {
    if (v === undefined || v === null) return null;
    if (!keys.length) return v;
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) { const r = readKeys(v[i], keys); if (r !== null) return r; }
      return null;
    }
    return typeof v === 'object' ? readKeys(v[keys[0]], keys.slice(1)) : null;
  }
  function allSteps(r) { const out = []; (r.requests || []).forEach((q, k) => (q.steps || []).forEach(s => out.push({ k, q, s }))); return out; }
  const RENDER = { state_graph: stateGraphView, step_table: stepTableView, items: itemsView };
  function viewShown(v, r, steps) {
    const stepPaths = Object.entries(v.fields).filter(([slot]) => !(v.kind === 'state_graph' && slot === 'boundary')).map(([, p]) => p).concat(v.details.map(d => d[1]));
    if (steps.some(x => stepPaths.some(p => readPath(x.s.method || {}, p) !== null))) return true;
    return v.kind === 'state_graph' && v.fields.boundary !== undefined && (r.requests || []).some(q => readPath(q.method || {}, v.fields.boundary) !== null);
  }
  function methodViews(ep, row) {
    const r = ep.rec, steps = allSteps(r);
    const box = el('div', { class: 'views' });
    for (const v of CELLS[row[F.cell]].views || []) {
      if (RENDER[v.kind] && viewShown(v, r, steps)) box.appendChild(RENDER[v.kind](v, r, steps));
    }
    return box.firstChild ? box : null;
  }

  function stateGraphView(v, r, steps) {
    const f = v.fields, list = (m, slot) => (f[slot] === undefined ? null : readPath(m, f[slot])) || [];
    const wrap = el('div', { class: 'fsview', id: v.name + '-view' }, el('h3', null, v.title));
    const events = [];
    steps.forEach(({ k, q, s }, i) => {
      const m = s.method || {};
      events.push({ k, t: s.t, valid: list(m, 'ops'), rejected: list(m, 'rejected'), disclosed: list(m, 'disclosed'), persisted: list(m, 'persisted'), boundary: null });
      const last = i === steps.length - 1 || steps[i + 1].k !== k;
      const boundary = f.boundary === undefined ? null : readPath(q.method || {}, f.boundary);
      if (last && boundary) events[events.length - 1].boundary = boundary;
    });
    const slider = el('input', { type: 'range', min: 1, max: Math.max(1, events.length), value: events.length, id: v.name + '-slider' });
    const label = el('span', { class: 'muted' });
    const graphBox = el('div', { class: 'graphwrap' });
    wrap.appendChild(el('div', null, 'step ', slider, ' ', label));
    wrap.appendChild(graphBox);
    function draw() {
      const upto = Number(slider.value);
      const nodes = new Map(), persisted = new Set();
      for (let i = 0; i < upto; i++) {
        const ev = events[i];
        for (const op of ev.valid) {
          const id = op.state_id;
          if (!id) continue;
          const o = String(op.operation || 'add');
          if (o === 'delete' || o === 'remove') { nodes.delete(id); continue; }
          const prev = nodes.get(id) || {};
          nodes.set(id, { id, set: op.state_set || prev.set || '?', summary: op.summary !== undefined ? op.summary : prev.summary, refs: op.refs !== undefined ? op.refs || [] : prev.refs || [], born: prev.born || i });
        }
        for (const id of ev.persisted.concat(ev.boundary || [])) persisted.add(id);
      }
      const ev = events[upto - 1] || { valid: [], rejected: [], disclosed: [], boundary: null, k: 0, t: 0 };
      label.textContent = events.length ? 'request ' + (ev.k + 1) + ', t=' + ev.t + ' (' + upto + ' / ' + events.length + ')' : 'no steps';
      const sets = [...new Set([...nodes.values()].map(n => n.set))];
      const cols = new Map(sets.map(s => [s, []]));
      for (const n of nodes.values()) cols.get(n.set).push(n);
      const rows = Math.max(1, ...[...cols.values()].map(c => c.length));
      const W = Math.max(320, 170 * sets.length), H = Math.max(120, 46 * rows + 40);
      const g = sv('svg', { class: 'graph', width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, 'data-nodes': nodes.size });
      const pos = new Map();
      sets.forEach((s, ci) => {
        g.appendChild(sv('text', { x: 170 * ci + 85, y: 16, 'text-anchor': 'middle', 'font-weight': 'bold' }, s));
        cols.get(s).forEach((n, ri) => pos.set(n.id, [170 * ci + 30, 40 + 46 * ri]));
      });
      const edges = sv('g');
      g.appendChild(edges);
      for (const n of nodes.values()) {
        for (const ref of n.refs || []) {
          const to = typeof ref === 'string' ? ref : ref && (ref.state_id || ref.target_id || ref.id);
          if (!pos.has(to)) continue;
          const [x1, y1] = pos.get(n.id), [x2, y2] = pos.get(to);
          edges.appendChild(sv('line', { class: 'edge', x1, y1, x2, y2 }, sv('title', null, n.id + ' —' + (ref.rel || '') + '→ ' + to)));
          if (ref.rel) edges.appendChild(sv('text', { x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 2, class: 'muted' }, ref.rel));
        }
      }
      const disclosed = new Set(ev.disclosed || []);
      sets.forEach((s, ci) => {
        cols.get(s).forEach(n => {
          const [x, y] = pos.get(n.id);
          const cls = 'node' + (n.born === upto - 1 ? ' new' : '') + (disclosed.has(n.id) ? ' disclosed' : '') + (persisted.has(n.id) ? ' persisted' : '');
          g.appendChild(sv('g', { class: cls, 'data-id': n.id },
            sv('circle', { cx: x, cy: y, r: 9, fill: color(ci), 'fill-opacity': persisted.has(n.id) ? 1 : 0.45, stroke: '#333' }),
            sv('text', { x: x + 14, y: y + 4 }, String(n.id).slice(0, 22)),
            sv('title', null, n.id + ' [' + n.set + ']\n' + (n.summary || ''))));
        });
      });
      const side = el('div', null,
        el('div', { class: 'label' }, 'this step'),
        el('div', null, 'validated operations: ' + ev.valid.length),
        ev.valid.length ? pre(ev.valid.map(o => (o.operation || 'add') + ' ' + o.state_id + ' [' + (o.state_set || '') + '] ' + (o.summary || '')).join('\n')) : null,
        el('div', { class: ev.rejected.length ? 'rejected' : '' }, 'rejected operations: ' + ev.rejected.length),
        ev.rejected.length ? pre(ev.rejected.map(x => '#' + x.index + ' ' + JSON.stringify(x.op) + '\n  → ' + x.reason).join('\n'), 'rejected') : null,
        el('div', null, 'disclosed this step: ' + ((ev.disclosed || []).join(', ') || 'none')),
        ev.boundary ? el('div', null, 'persisted at the request boundary: ' + (ev.boundary.join(', ') || 'none')) : null,
        el('div', { class: 'muted' }, 'legend: green ring = added this step, dashed blue = disclosed this step, solid = persisted; columns = state sets'));
      clear(graphBox);
      graphBox.appendChild(g);
      graphBox.appendChild(side);
    }
    slider.addEventListener('input', draw);
    draw();
    return wrap;
  }

  function cellValue(v) {
    if (v === null || v === undefined || v === false) return '';
    if (v === true) return 'yes';
    if (typeof v === 'number') return Math.round(v * 100) / 100;
    return typeof v === 'object' ? 'yes' : String(v);
  }
  function stepTableView(v, r, steps) {
    const wrap = el('div', { id: v.name + '-view' }, el('h3', null, v.title));
    const cols = Object.entries(v.fields);
    const rows = steps.map(({ k, s }) => [k + 1, s.t].concat(cols.map(([, p]) => cellValue(readPath(s.method || {}, p)))));
    const detailBox = el('div');
    const show1 = i => {
      const m = steps[i].s.method || {};
      clear(detailBox).appendChild(el('div', null,
        el('div', { class: 'label' }, 'request ' + (steps[i].k + 1) + ', t=' + steps[i].s.t),
        v.details.map(([title, p]) => { const val = readPath(m, p); return jsonBlock(title, val, val !== null); })));
    };
    wrap.appendChild(table(['request', 't'].concat(cols.map(([h]) => h)), rows, (row, i) => ({ class: 'click', onclick: () => show1(i) })));
    wrap.appendChild(detailBox);
    if (steps.length) show1(steps.length - 1);
    return wrap;
  }

  function itemsView(v, r, steps) {
    const shown = steps.map(x => ({ ...x, items: readPath(x.s.method || {}, v.fields.items) })).filter(x => x.items !== null);
    return el('div', { id: v.name + '-view' }, el('h3', null, v.title),
      shown.map(({ k, s, items }) => el('div', null, el('div', { class: 'label' }, 'request ' + (k + 1) + ', t=' + s.t), pre((Array.isArray(items) ? items : [items]).map((x, j) => (j + 1) + '. ' + x).join('\n') || '(nothing retrieved)'))));
  }

  // ------------------------------------------------------------------ compare
  const tCmp = tab('compare', 'Compare');
  const cmpA = select('cmp-a', 'A', CELLS.map((c, i) => [String(i), cellLabel(i)]), () => fillTasks());
  const cmpB = select('cmp-b', 'B', CELLS.map((c, i) => [String(i), cellLabel(i)]), () => fillTasks());
  const cmpT = el('select', { id: 'cmp-task' });
  const cmpOut = el('div', { id: 'cmp-out' });
  tCmp.appendChild(el('div', { class: 'filters' }, cmpA, cmpB, el('label', null, 'task ', cmpT), el('button', { id: 'cmp-go', onclick: () => compare() }, 'compare')));
  tCmp.appendChild(cmpOut);
  if (CELLS.length > 1) {  // default pair: two methods on the same benchmark
    const j = CELLS.findIndex((c, i) => i > 0 && c.benchmark === CELLS[0].benchmark);
    cmpB.querySelector('select').value = String(j > 0 ? j : 1);
  }
  function epsOf(ci) { const out = new Map(); EPS.forEach((e, i) => { if (e[F.cell] === ci && e[F.status] === 'ok') out.set(e[F.task_id] + '#' + e[F.trial], i); }); return out; }
  function fillTasks() {
    const a = epsOf(Number(cmpA.querySelector('select').value)), b = epsOf(Number(cmpB.querySelector('select').value));
    clear(cmpT);
    for (const k of a.keys()) if (b.has(k)) cmpT.appendChild(el('option', { value: k }, k));
    if (!cmpT.firstChild) cmpT.appendChild(el('option', { value: '' }, '(no task in common)'));
  }
  // The case walkthrough: step by step, each side's decision and what its method tracked, read from
  // the method's declared views (PoS: belief, gaps, frontier, health H, trapping, recovery; FlowState:
  // the state updates ISU applied, what PSA disclosed, the active state's size), a link per step
  // (#compare/<cell A>/<cell B>/<task#trial>/step/<n>) and a Markdown copy for a paper's appendix.
  function shortText(v) { const t = typeof v === 'string' ? v : JSON.stringify(v); return t.length > 240 ? t.slice(0, 239) + '…' : t; }
  function isEmpty(x) { return x === null || x === false || (Array.isArray(x) && !x.length) || (typeof x === 'object' && x !== null && !Array.isArray(x) && !Object.keys(x).length); }
  function tracker(ci) {
    const live = new Map();  // a state graph's nodes so far (the active state)
    return s => {
      const m = (s && s.method) || {}, out = [];
      for (const v of CELLS[ci].views || []) {
        if (v.kind === 'step_table') {
          const fieldPaths = Object.values(v.fields).flat();
          for (const [slot, p] of Object.entries(v.fields)) { const x = readPath(m, p); if (!isEmpty(x)) out.push([slot, x === true ? 'yes' : shortText(x)]); }
          for (const [title, p] of v.details) {
            if ([p].flat().some(dp => fieldPaths.some(fp => fp === dp || String(fp).startsWith(dp + '.')))) continue;  // shown above
            const x = readPath(m, p);
            if (!isEmpty(x)) out.push([title, shortText(x)]);
          }
        } else if (v.kind === 'state_graph') {
          const get = slot => (v.fields[slot] === undefined ? null : readPath(m, v.fields[slot])) || [];
          const ops = get('ops'), rejected = get('rejected'), disclosed = get('disclosed');
          for (const o of ops) { if (!o.state_id) continue; if (['delete', 'remove'].includes(String(o.operation))) live.delete(o.state_id); else live.set(o.state_id, o); }
          if (ops.length) out.push(['state updates (ISU)', ops.map(o => (o.operation || 'add') + ' ' + o.state_id + (o.summary ? ': ' + shortText(o.summary) : '')).join('; ')]);
          if (rejected.length) out.push(['rejected updates', String(rejected.length)]);
          if (disclosed.length) out.push(['disclosed (PSA)', disclosed.join(', ')]);
          out.push(['active state', live.size + ' node' + (live.size === 1 ? '' : 's')]);
        } else if (v.kind === 'items') {
          const x = readPath(m, v.fields.items);
          if (!isEmpty(x)) out.push([v.title, shortText(x)]);
        }
      }
      return out;
    };
  }
  function mdCell(text) { return String(text).replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' '); }
  async function compare(step) {
    const ca = Number(cmpA.querySelector('select').value), cb = Number(cmpB.querySelector('select').value), key = cmpT.value;
    clear(cmpOut);
    if (!key) return;
    const ia = epsOf(ca).get(key), ib = epsOf(cb).get(key);
    const [A, B] = await Promise.all([loadEpisode(ia), loadEpisode(ib)]);
    const base = '#compare/' + enc(CELLS[ca].cell) + '/' + enc(CELLS[cb].cell) + '/' + enc(key);
    if (!location.hash.startsWith(base)) history.replaceState(null, '', base);
    const head = (ci, i, E) => el('div', null, el('b', null, cellLabel(ci)), el('div', null, 'success ' + (EPS[i][F.success] === null ? '–' : EPS[i][F.success]) + ' · ' + fmtNum(EPS[i][F.tokens]) + ' method tokens · ' + EPS[i][F.steps] + ' steps'));
    cmpOut.appendChild(el('div', { class: 'cols' }, head(ca, ia, A), head(cb, ib, B)));
    const trackA = tracker(ca), trackB = tracker(cb);
    const md = ['### Case walkthrough: task ' + key, '', 'A: ' + cellLabel(ca) + ' · B: ' + cellLabel(cb), ''];
    const side = (s, track) => {
      if (!s) return ['', []];
      const dec = decisionSummary(s.decision) + ((s.method || {}).protocol_errors && s.method.protocol_errors.length ? ' ⚠' : '');
      return [dec, track(s)];
    };
    const cellNode = ([dec, state]) => el('div', null, el('div', { class: 'wt-dec' }, dec),
      state.length ? el('dl', { class: 'wt-state' }, state.map(([k, v]) => [el('dt', null, k), el('dd', null, v)])) : null);
    const cellMd = ([dec, state]) => mdCell([dec].concat(state.map(([k, v]) => '*' + k + '*: ' + v)).filter(Boolean).join('<br>'));
    let n = 0;
    const nReq = Math.max((A.rec.requests || []).length, (B.rec.requests || []).length);
    for (let k = 0; k < nReq; k++) {
      const qa = (A.rec.requests || [])[k], qb = (B.rec.requests || [])[k];
      const q = qa || qb;
      cmpOut.appendChild(el('h3', null, 'Request ' + (k + 1) + ': ' + q.request.request_id));
      cmpOut.appendChild(pre(q.request.text));
      md.push('#### Request ' + (k + 1) + ': ' + q.request.request_id, '', '| step | A: ' + CELLS[ca].method + ' | B: ' + CELLS[cb].method + ' |', '|---|---|---|');
      const steps = Math.max(qa ? qa.steps.length : 0, qb ? qb.steps.length : 0);
      const rows = [];
      for (let t = 0; t < steps; t++) {
        n += 1;
        const a = side(qa && qa.steps[t], trackA), b = side(qb && qb.steps[t], trackB);
        rows.push([el('a', { href: base + '/step/' + n, class: 'wt-link', title: 'a link to this step' }, String(t + 1)), cellNode(a), cellNode(b)]);
        md.push('| ' + n + ' | ' + cellMd(a) + ' | ' + cellMd(b) + ' |');
      }
      const oa = qa ? qa.outcome || {} : {}, ob = qb ? qb.outcome || {} : {};
      const fa = String(oa.final_response === undefined ? '' : oa.final_response), fb = String(ob.final_response === undefined ? '' : ob.final_response);
      rows.push(['final', fa, fb]);
      md.push('| final | ' + mdCell(fa) + ' | ' + mdCell(fb) + ' |', '');
      let first = n - steps;
      cmpOut.appendChild(table(['t', 'A: ' + CELLS[ca].method, 'B: ' + CELLS[cb].method], rows, (r, i) => (i < steps ? { id: 'wt-step-' + (first + i + 1), class: 'wt-step' } : null)));
    }
    const text = md.join('\n');
    cmpOut.appendChild(el('details', { id: 'wt-export' }, el('summary', null, 'Markdown of this walkthrough (for a paper\'s appendix)'),
      el('a', { download: 'walkthrough-' + key.replace(/[^\w.-]+/g, '_') + '.md', href: 'data:text/markdown;charset=utf-8,' + enc(text), id: 'wt-download' }, 'download walkthrough.md'),
      pre(text, 'wt-md')));
    cmpOut.setAttribute('data-done', key);
    if (step) {
      const row = cmpOut.querySelector('#wt-step-' + step);
      for (const r of cmpOut.querySelectorAll('tr.target')) r.classList.remove('target');
      if (row) { row.classList.add('target'); row.scrollIntoView({ block: 'center' }); }
      else cmpOut.insertBefore(el('div', { class: 'errnote', id: 'not-found' }, 'this walkthrough has no step ' + step), cmpOut.firstChild);
    }
  }
  fillTasks();

  // ------------------------------------------------------------------ start
  refresh(0);
  route();
  document.body.setAttribute('data-ready-ms', String(Math.round(performance.now())));
  window.__report = { openEpisode, show, compare, loadEpisode, runTextSearch };
})();
