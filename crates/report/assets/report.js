// pado HTML report: hand-written SVG line charts and sortable tables. No dependencies,
// works offline. Every value drawn comes from the JSON block `#data` and is inserted
// with textContent / setAttribute only, never as markup.
(function () {
  'use strict';
  var NS = 'http://www.w3.org/2000/svg';
  var data = null;
  try {
    var el = document.getElementById('data');
    data = el ? JSON.parse(el.textContent || 'null') : null;
  } catch (e) {
    data = null;
  }

  function node(tag, attrs, parent) {
    var e = document.createElementNS(NS, tag);
    if (attrs) {
      for (var k in attrs) {
        if (Object.prototype.hasOwnProperty.call(attrs, k)) e.setAttribute(k, String(attrs[k]));
      }
    }
    if (parent) parent.appendChild(e);
    return e;
  }

  function trimZeros(t) {
    return t.indexOf('.') < 0 ? t : t.replace(/0+$/, '').replace(/\.$/, '');
  }

  function fmtNum(v) {
    if (v === null || v === undefined || !isFinite(v)) return '–';
    var a = Math.abs(v);
    if (a >= 1e9) return trimZeros((v / 1e9).toFixed(2)) + 'G';
    if (a >= 1e6) return trimZeros((v / 1e6).toFixed(2)) + 'M';
    if (a >= 1e4) return trimZeros((v / 1e3).toFixed(1)) + 'k';
    if (a >= 100 || Math.round(v) === v) return String(Math.round(v));
    if (a >= 10) return trimZeros(v.toFixed(1));
    if (a >= 1) return trimZeros(v.toFixed(2));
    return trimZeros(v.toFixed(3));
  }

  function pad2(n) {
    return (n < 10 ? '0' : '') + n;
  }

  function fmtTime(s) {
    s = Math.round(s);
    if (s < 60) return s + 's';
    var h = Math.floor(s / 3600);
    var m = Math.floor((s % 3600) / 60);
    var sec = s % 60;
    if (h > 0) return h + 'h' + pad2(m) + (sec ? pad2(sec) + 's' : '');
    return m + 'm' + (sec ? pad2(sec) + 's' : '');
  }

  function niceStep(range, target) {
    var raw = range / Math.max(1, target);
    if (!(raw > 0)) return 1;
    var mag = Math.pow(10, Math.floor(Math.log(raw) / Math.LN10));
    var n = raw / mag;
    return (n <= 1 ? 1 : n <= 2 ? 2 : n <= 2.5 ? 2.5 : n <= 5 ? 5 : 10) * mag;
  }

  function timeStep(range, target) {
    var steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];
    var raw = range / Math.max(1, target);
    for (var i = 0; i < steps.length; i++) if (steps[i] >= raw) return steps[i];
    return niceStep(range, target);
  }

  // Nearest point of `pts` (sorted by x) to x.
  function nearest(pts, x) {
    var lo = 0;
    var hi = pts.length - 1;
    if (hi < 0) return null;
    while (hi - lo > 1) {
      var mid = (lo + hi) >> 1;
      if (pts[mid][0] < x) lo = mid;
      else hi = mid;
    }
    return Math.abs(pts[lo][0] - x) <= Math.abs(pts[hi][0] - x) ? pts[lo] : pts[hi];
  }

  var hidden = {};

  function render(host, key, spec) {
    var body = host.querySelector('.chart-body');
    var legend = host.querySelector('.legend');
    if (!body) return;
    body.textContent = '';
    var series = spec.series || [];
    var stages = data.stages || [];
    var rows = stages.length ? (data.stage_rows || 1) : 0;
    var W = Math.max(320, Math.floor(body.clientWidth || 800));
    var M = { l: 52, r: 14, t: 8 + rows * 15, b: 26 };
    var H = 230 + rows * 15;
    var pw = W - M.l - M.r;
    var ph = H - M.t - M.b;
    var xmax = Math.max(1, data.duration || 0);
    var ymax = 0;
    var any = false;
    series.forEach(function (s) {
      if (hidden[key + '/' + s.name]) return;
      s.pts.forEach(function (p) {
        any = true;
        if (p[1] > ymax) ymax = p[1];
      });
    });
    var logBox = host.querySelector('input.log-scale');
    var log = !!(logBox && logBox.checked);
    var ymin = Infinity;
    series.forEach(function (s) {
      if (hidden[key + '/' + s.name]) return;
      s.pts.forEach(function (p) {
        if (p[1] > 0 && p[1] < ymin) ymin = p[1];
      });
    });
    var ystep, ytop, lmin, lmax;
    if (log) {
      lmin = Math.floor(Math.log(isFinite(ymin) ? ymin : 1) / Math.LN10);
      lmax = Math.ceil(Math.log(ymax > 0 ? ymax : 10) / Math.LN10);
      if (lmax <= lmin) lmax = lmin + 1;
    } else {
      ystep = niceStep(ymax > 0 ? ymax : 1, 5);
      if (spec.int && ystep < 1) ystep = 1;
      ytop = Math.max(ystep, Math.ceil((ymax * 1.02) / ystep) * ystep);
    }
    function X(x) {
      return M.l + (x / xmax) * pw;
    }
    function Y(y) {
      if (log) {
        var l = Math.log(Math.max(y, Math.pow(10, lmin))) / Math.LN10;
        return M.t + ph - ((l - lmin) / (lmax - lmin)) * ph;
      }
      return M.t + ph - (y / ytop) * ph;
    }
    var root = node('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, role: 'img' }, body);
    var title = host.querySelector('h3');
    if (title) root.setAttribute('aria-label', title.textContent);

    // Stage bands, boundaries and labels.
    stages.forEach(function (st) {
      var x0 = X(Math.max(0, Math.min(xmax, st.start)));
      var x1 = X(Math.max(0, Math.min(xmax, st.end)));
      if (!(x1 > x0)) return;
      if (st.row === 0 && st.index % 2 === 0) node('rect', { class: 'band', x: x0, y: M.t, width: x1 - x0, height: ph }, root);
      if (st.start > 0) node('line', { class: 'boundary', x1: x0, x2: x0, y1: M.t - rows * 15 + st.row * 15, y2: M.t + ph }, root);
      var label = rows > 1 ? st.scenario + ' · ' + st.label : st.label;
      var room = Math.floor((x1 - x0 - 6) / 6.2);
      if (room >= 3) {
        if (label.length > room) label = label.slice(0, room - 1) + '…';
        var t = node('text', { class: 'stage', x: x0 + 3, y: 11 + st.row * 15 }, root);
        t.textContent = label;
        var full = node('title', null, t);
        full.textContent = (rows > 1 ? st.scenario + ' · ' : '') + st.label + ' (' + fmtTime(st.start) + '–' + fmtTime(st.end) + ')';
      }
    });

    // Event windows (shaded) and points (a line), named on hover.
    (data.events || []).forEach(function (ev) {
      var x0 = X(Math.max(0, Math.min(xmax, ev.start)));
      var tip = ev.name + ' (' + fmtTime(ev.start) + (ev.end != null ? '–' + fmtTime(ev.end) : '') + ')';
      var shape;
      var cls = (ev.control ? ' control' : '') + (ev.ok ? '' : ' failed');
      if (ev.end != null) {
        var x1 = X(Math.max(0, Math.min(xmax, ev.end)));
        shape = node('rect', { class: 'event-window' + cls, x: x0, y: M.t, width: Math.max(1, x1 - x0), height: ph }, root);
      } else {
        shape = node('line', { class: 'event-point' + cls, x1: x0, x2: x0, y1: M.t, y2: M.t + ph }, root);
      }
      node('title', null, shape).textContent = tip;
    });

    // Y grid and labels.
    var yticks = [];
    if (log) {
      for (var e = lmin; e <= lmax; e++) {
        yticks.push(Math.pow(10, e));
        if (lmax - lmin <= 2 && e < lmax) yticks.push(2 * Math.pow(10, e), 5 * Math.pow(10, e));
      }
    } else {
      for (var yv = 0; yv <= ytop + ystep / 2; yv += ystep) yticks.push(yv);
    }
    yticks.forEach(function (v, i) {
      var yy = Y(v);
      node('line', { class: i === 0 ? 'axis' : 'grid', x1: M.l, x2: M.l + pw, y1: yy, y2: yy }, root);
      var yl = node('text', { x: M.l - 6, y: yy + 4, 'text-anchor': 'end' }, root);
      yl.textContent = fmtNum(v);
    });
    // X ticks.
    var xstep = timeStep(xmax, Math.max(2, Math.floor(pw / 90)));
    for (var xv = 0; xv <= xmax + 1e-9; xv += xstep) {
      var xx = X(xv);
      node('line', { class: 'axis', x1: xx, x2: xx, y1: M.t + ph, y2: M.t + ph + 4 }, root);
      var xl = node('text', { x: xx, y: M.t + ph + 16, 'text-anchor': 'middle' }, root);
      xl.textContent = fmtTime(xv);
    }
    if (spec.unit) {
      var uy = M.t + ph / 2;
      var ul = node('text', { x: 12, y: uy, 'text-anchor': 'middle', transform: 'rotate(-90 12 ' + uy + ')' }, root);
      ul.textContent = spec.unit;
    }

    if (!any) {
      var et = node('text', { class: 'empty', x: M.l + pw / 2, y: M.t + ph / 2, 'text-anchor': 'middle' }, root);
      et.textContent = 'no data';
    }

    // Lines.
    var gap = spec.gap || 0;
    series.forEach(function (s) {
      if (hidden[key + '/' + s.name] || !s.pts.length) return;
      var d = '';
      var prev = null;
      s.pts.forEach(function (p) {
        var cmd = prev === null || (gap > 0 && p[0] - prev[0] > gap) ? 'M' : 'L';
        d += cmd + X(p[0]).toFixed(1) + ',' + Y(p[1]).toFixed(1);
        prev = p;
      });
      var attrs = { d: d, fill: 'none', stroke: s.color, 'stroke-width': 1.6, 'stroke-linejoin': 'round' };
      if (s.dash) attrs['stroke-dasharray'] = '5 3';
      node('path', attrs, root);
      if (s.pts.length < 3) {
        s.pts.forEach(function (p) {
          node('circle', { cx: X(p[0]), cy: Y(p[1]), r: 3, fill: s.color }, root);
        });
      }
    });

    // Legend (click to hide a series).
    if (legend) {
      legend.textContent = '';
      series.forEach(function (s) {
        var item = document.createElement('span');
        var sw = document.createElement('i');
        sw.style.background = s.color;
        item.appendChild(sw);
        item.appendChild(document.createTextNode(s.name));
        if (hidden[key + '/' + s.name]) item.className = 'off';
        item.addEventListener('click', function () {
          hidden[key + '/' + s.name] = !hidden[key + '/' + s.name];
          render(host, key, spec);
        });
        legend.appendChild(item);
      });
    }

    // Hover: a cursor line and the nearest value of every series.
    var tip = document.createElement('div');
    tip.className = 'tip';
    body.appendChild(tip);
    var cursor = node('line', { class: 'cursor', x1: 0, x2: 0, y1: M.t, y2: M.t + ph, visibility: 'hidden' }, root);
    var overlay = node('rect', { x: M.l, y: M.t, width: pw, height: ph, fill: 'transparent' }, root);
    overlay.addEventListener('mousemove', function (ev) {
      var box = root.getBoundingClientRect();
      var px = ev.clientX - box.left;
      var x = ((px - M.l) / pw) * xmax;
      var lines = [];
      var cx = null;
      series.forEach(function (s) {
        if (hidden[key + '/' + s.name]) return;
        var p = nearest(s.pts, x);
        if (!p) return;
        if (cx === null || Math.abs(p[0] - x) < Math.abs(cx - x)) cx = p[0];
        lines.push([s, p]);
      });
      if (!lines.length) return;
      tip.textContent = '';
      var head = document.createElement('b');
      head.textContent = 't = ' + fmtTime(cx);
      tip.appendChild(head);
      lines.forEach(function (l) {
        var row = document.createElement('div');
        var dot = document.createElement('i');
        dot.style.background = l[0].color;
        row.appendChild(dot);
        row.appendChild(document.createTextNode(l[0].name + ': ' + fmtNum(l[1][1]) + (spec.unit ? ' ' + spec.unit : '')));
        tip.appendChild(row);
      });
      cursor.setAttribute('x1', X(cx));
      cursor.setAttribute('x2', X(cx));
      cursor.setAttribute('visibility', 'visible');
      tip.style.display = 'block';
      var left = X(cx) + 12;
      if (left + tip.offsetWidth > W) left = X(cx) - tip.offsetWidth - 12;
      tip.style.left = Math.max(0, left) + 'px';
      tip.style.top = M.t + 4 + 'px';
    });
    overlay.addEventListener('mouseleave', function () {
      tip.style.display = 'none';
      cursor.setAttribute('visibility', 'hidden');
    });
  }

  Array.prototype.forEach.call(document.querySelectorAll('input.log-scale'), function (box) {
    box.addEventListener('change', function () {
      var key = box.getAttribute('data-chart');
      var host = document.getElementById('chart-' + key);
      if (host && data && data.charts && data.charts[key]) render(host, key, data.charts[key]);
    });
  });

  function renderAll() {
    if (!data || !data.charts) return;
    Object.keys(data.charts).forEach(function (key) {
      var host = document.getElementById('chart-' + key);
      if (host) render(host, key, data.charts[key]);
    });
  }

  // Sortable tables: numbers sort by data-value, text by locale.
  function sortable(table) {
    var heads = table.querySelectorAll('thead th');
    Array.prototype.forEach.call(heads, function (th, col) {
      th.addEventListener('click', function () {
        var tbody = table.tBodies[0];
        if (!tbody) return;
        var rowsArr = Array.prototype.filter.call(tbody.rows, function (r) {
          return !r.classList.contains('empty');
        });
        var asc = !th.classList.contains('asc');
        Array.prototype.forEach.call(heads, function (h) {
          h.classList.remove('asc', 'desc');
        });
        th.classList.add(asc ? 'asc' : 'desc');
        function key(r) {
          var c = r.cells[col];
          if (!c) return '';
          var v = c.getAttribute('data-value');
          if (v !== null && v !== '' && !isNaN(Number(v))) return Number(v);
          return c.textContent;
        }
        rowsArr.sort(function (a, b) {
          var ka = key(a);
          var kb = key(b);
          var r = typeof ka === 'number' && typeof kb === 'number' ? ka - kb : String(ka).localeCompare(String(kb));
          return asc ? r : -r;
        });
        rowsArr.forEach(function (r) {
          tbody.appendChild(r);
        });
      });
    });
  }

  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'), sortable);
  renderAll();
  var timer = null;
  window.addEventListener('resize', function () {
    clearTimeout(timer);
    timer = setTimeout(renderAll, 150);
  });
})();
