// The results explorer (omnisocial.explorer): plain JavaScript, no library, nothing from another
// site. Reads window.EXPLORER_DATA (items.js); the item shown is the URL's hash (#<item id>).
(function () {
  "use strict";
  var D = window.EXPLORER_DATA;
  var ROW = 44; // px, fixed: the list draws only the rows in view (2,000+ items stay fast)
  var view = [];
  var byId = new Map();
  var current = null;
  var $ = function (id) { return document.getElementById(id); };

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) Object.keys(attrs).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined) return;
      if (k === "text") node.textContent = v;
      else if (k === "class") node.className = v;
      else node.setAttribute(k, v);
    });
    (children || []).forEach(function (c) { if (c) node.appendChild(c); });
    return node;
  }
  function fmt(v, digits) {
    if (v === null || v === undefined || v === "") return "";
    if (typeof v === "number") return Number.isInteger(v) ? String(v) : v.toFixed(digits === undefined ? 3 : digits);
    if (typeof v === "boolean") return v ? "yes" : "no";
    return String(v);
  }

  // --- index every item once: what the filters test ------------------------------------------
  function prepare(item) {
    // the writer indexed each item (omnisocial.explorer.indexed): its answers stay a JSON string
    // until the item is shown (full())
    item._models = new Set(item.models); item._statuses = new Set(item.statuses); item._wrong = item.wrong;
    item._modelStatus = {};
    Object.keys(item.status).forEach(function (m) { item._modelStatus[m] = new Set(item.status[m]); });
    item._search = (item.id + " " + (item.title || "") + " " + item.search).toLowerCase();
    item._modalities = new Set(item.modalities || []);
    byId.set(item.id, item);
  }

  // an item's detail (answers, timeline, facts) comes in its chunk's file, loaded by a <script>
  // (allowed from file://) the first time one of the chunk's items is shown
  var details = new Map(), waiting = {};
  window.EXPLORER_DETAIL = function (chunk, map) {
    Object.keys(map).forEach(function (id) { details.set(id, Object.assign({}, byId.get(id), map[id])); });
    (waiting[chunk] || []).forEach(function (done) { done(); });
    waiting[chunk] = null;
  };
  function withDetail(item, done) {
    if (details.has(item.id)) return done(details.get(item.id));
    var chunk = item.chunk, again = function () { done(details.get(item.id)); };
    if (waiting[chunk]) { waiting[chunk].push(again); return; }
    waiting[chunk] = [again];
    var script = document.createElement("script");
    script.src = "details/" + String(chunk).padStart(4, "0") + ".js";
    script.onerror = function () { waiting[chunk] = null; done(null, script.src); };
    document.head.appendChild(script);
  }

  function fill(select, values, labels) {
    values.forEach(function (v) { select.appendChild(el("option", { value: v, text: labels ? labels[v] : v })); });
  }

  function state() {
    var d = parseFloat($("f-difficulty").value);
    return {
      benchmark: $("f-benchmark").value, model: $("f-model").value, modality: $("f-modality").value,
      status: $("f-status").value, truth: $("f-truth").value, flag: $("f-flag").value,
      difficulty: isNaN(d) ? null : d, search: $("f-search").value.trim().toLowerCase(), sort: $("f-sort").value
    };
  }

  function keep(item, s) {
    if (s.benchmark && item.benchmark !== s.benchmark) return false;
    if (s.model && !item._models.has(s.model)) return false;
    if (s.modality && !item._modalities.has(s.modality)) return false;
    if (s.status) {
      var has = s.model ? (item._modelStatus[s.model] || new Set()).has(s.status) : item._statuses.has(s.status);
      if (!has) return false;
    }
    // "benchmark: truth" (omnisocial.explorer.truth_choice): a label within its own benchmark
    if (s.truth && item.benchmark + ": " + String(item.truth) !== s.truth) return false;
    if (s.flag && !item.flags[s.flag]) return false;
    if (s.difficulty !== null && !(item.difficulty !== null && item.difficulty >= s.difficulty)) return false;
    if (s.search && item._search.indexOf(s.search) < 0) return false;
    return true;
  }

  var SORTS = {
    "id": function (a, b) { return a.id < b.id ? -1 : a.id > b.id ? 1 : 0; },
    "benchmark": function (a, b) { return a.benchmark.localeCompare(b.benchmark) || SORTS.id(a, b); },
    "difficulty-desc": function (a, b) { return nz(b.difficulty) - nz(a.difficulty) || SORTS.id(a, b); },
    "difficulty-asc": function (a, b) { return nz(a.difficulty, 1) - nz(b.difficulty, 1) || SORTS.id(a, b); },
    "wrong-desc": function (a, b) { return b._wrong - a._wrong || SORTS.id(a, b); }
  };
  function nz(v, sign) { return v === null || v === undefined ? (sign ? Infinity : -Infinity) : v; }

  function apply() {
    var t0 = performance.now(), s = state();
    view = D.items.filter(function (item) { return keep(item, s); });
    view.sort(SORTS[s.sort] || SORTS.id);
    $("count").textContent = view.length + " of " + D.items.length + " items";
    $("list-inner").style.height = view.length * ROW + "px";
    $("list").scrollTop = 0;
    drawRows();
    window.EXPLORER_LAST_FILTER_MS = performance.now() - t0;
  }

  function drawRows() {
    var list = $("list"), inner = $("list-inner");
    var first = Math.max(0, Math.floor(list.scrollTop / ROW) - 5);
    var last = Math.min(view.length, first + Math.ceil(list.clientHeight / ROW) + 10);
    inner.textContent = "";
    for (var i = first; i < last; i++) {
      var item = view[i];
      var badges = [el("span", { class: "badge", text: item.benchmark })];
      Object.keys(D.flags).forEach(function (f) {
        if (item.flags[f]) badges.push(el("span", { class: "badge flag", title: D.flags[f], text: f.replace(/_/g, " ") }));
      });
      var meta = "truth: " + fmt(item.truth) + (item.difficulty !== null && item.difficulty !== undefined ? " · difficulty " + fmt(item.difficulty, 2) : "") + " · " + item._wrong + " wrong";
      var row = el("div", { class: "row" + (current && current.id === item.id ? " selected" : ""), "data-id": item.id, style: "top:" + i * ROW + "px" }, [
        el("div", null, [el("span", { class: "id", text: item.id + " " })].concat(badges)),
        el("div", { class: "meta", text: meta })
      ]);
      inner.appendChild(row);
    }
  }

  // --- one item ----------------------------------------------------------------------------
  function stopMedia() {
    document.querySelectorAll("#detail video, #detail audio").forEach(function (m) {
      m.pause(); m.removeAttribute("src"); m.load(); // frees the decoder and the file
    });
  }

  function player(media) {
    if (media.kind === "text") {
      return el("figure", null, [el("figcaption", { text: media.label }),
        el("a", { href: media.src, target: "_blank", text: "open the transcript file" })]);
    }
    var node = el(media.kind, { controls: "", preload: "metadata", "data-start": media.start, "data-end": media.end, class: "player" });
    node.src = media.src; // set only now: media load for the item shown, never for the list
    var start = media.start || 0, end = media.end;
    node.addEventListener("loadedmetadata", function () { if (start) node.currentTime = start; });
    node.addEventListener("timeupdate", function () {
      if (end !== null && end !== undefined && node.currentTime >= end) { node.pause(); }
      movePlayheads(node.currentTime);
    });
    var caption = media.label + (end !== null && end !== undefined ? " (" + fmt(start, 1) + "–" + fmt(end, 1) + " s)" : "");
    return el("figure", null, [node, el("figcaption", { text: caption })]);
  }

  function movePlayheads(t) {
    document.querySelectorAll("#detail .timeline").forEach(function (tl) {
      var a = parseFloat(tl.dataset.start), b = parseFloat(tl.dataset.end), head = tl.querySelector(".playhead");
      if (head && b > a) head.style.left = "calc(130px + (100% - 136px) * " + Math.min(1, Math.max(0, (t - a) / (b - a))) + ")";
    });
  }

  function timeline(tl) {
    var a = tl.start, b = tl.end, w = b - a;
    if (!(w > 0)) return null;
    var pos = function (t) { return (100 * (t - a) / w) + "%"; };
    var box = el("div", { class: "timeline", "data-start": a, "data-end": b });
    var axis = el("div", { class: "axis" }, [el("span", { class: "label" })]);
    var lane = el("div", { class: "lane" });
    var step = Math.pow(10, Math.floor(Math.log10(w))) / (w / Math.pow(10, Math.floor(Math.log10(w))) < 3 ? 2 : 1);
    for (var t = Math.ceil(a / step) * step; t <= b + 1e-9; t += step) lane.appendChild(el("span", { style: "left:" + pos(t), text: fmt(t, 1) + " s" }));
    axis.appendChild(lane); box.appendChild(axis);
    (tl.tracks || []).forEach(function (track) {
      var l = el("div", { class: "lane" });
      (track.spans || []).forEach(function (span) {
        if (span[1] < a || span[0] > b) return; // outside the window shown: clipped to it below
        var s = [Math.max(span[0], a), Math.min(span[1], b), span[2], span[3]];
        l.appendChild(el("div", { class: "span kind-" + (s[3] || "speech"), title: fmt(s[0], 2) + "–" + fmt(s[1], 2) + " s " + (s[2] || ""), style: "left:" + pos(s[0]) + ";width:" + (100 * Math.max(0.002, (s[1] - s[0]) / w)) + "%" }));
      });
      (track.points || []).forEach(function (p) {
        if (p[0] < a || p[0] > b) return;
        l.appendChild(el("div", { class: "point kind-" + (p[2] || "event"), "data-t": p[0], title: fmt(p[0], 2) + " s " + (p[1] || ""), style: "left:" + pos(p[0]) }));
      });
      box.appendChild(el("div", { class: "track", "data-track": track.label }, [el("div", { class: "label", title: track.label, text: track.label }), l]));
    });
    (tl.marks || []).forEach(function (m) {
      box.appendChild(el("div", { class: "lane", style: "pointer-events:none" }, [el("div", { class: "mark", title: m[1] + " at " + fmt(m[0], 2) + " s", style: "left:" + pos(m[0]) })]));
    });
    box.appendChild(el("div", { class: "playhead", style: "left:130px" }));
    return box;
  }

  function answers(list) {
    var head = el("tr", null, ["rater", "type", "modality", "answer", "correct", "status", "confidence", "score", "reason / text"].map(function (h) { return el("th", { text: h }); }));
    var rows = list.map(function (a) {
      return el("tr", {
        class: "answer-row correct-" + a.correct + " status-" + (a.status || ""),
        "data-rater": a.rater, "data-type": a.type, "data-modality": a.modality || "", "data-answer": a.answer === null || a.answer === undefined ? "" : String(a.answer),
        "data-correct": a.correct === null || a.correct === undefined ? "" : String(a.correct), "data-status": a.status || "",
        "data-confidence": a.confidence === null || a.confidence === undefined ? "" : String(a.confidence),
        "data-score": a.score === null || a.score === undefined ? "" : String(a.score)
      }, [
        el("td", { text: a.rater }), el("td", { text: a.type }), el("td", { text: a.modality || "" }),
        el("td", { class: "answer", text: fmt(a.answer) }), el("td", { text: fmt(a.correct) }),
        el("td", { text: [a.status, a.reason].filter(Boolean).join(": ") }), el("td", { text: fmt(a.confidence, 2) }),
        el("td", { text: fmt(a.score, 2) }), el("td", { class: "text", text: a.text || "" })
      ]);
    });
    return el("table", { class: "answers" }, [el("thead", null, [head]), el("tbody", null, rows)]);
  }

  function show(id) {
    if (!byId.has(id)) return draw(null, id);
    withDetail(byId.get(id), function (item, failed) {
      // drawn unless another item was asked for meanwhile
      if (decodeURIComponent(location.hash.replace(/^#/, "")) === id) draw(item, id, failed);
    });
  }

  function draw(item, id, failed) {
    stopMedia();
    var detail = $("detail");
    detail.textContent = "";
    current = item || null;
    drawRows();
    if (!item) {
      var hint = failed ? "Could not load " + failed + "." : id ? "No item " + id + " in this run." : "Pick an item on the left.";
      detail.appendChild(el("p", { class: "hint", text: hint }));
      return;
    }
    detail.setAttribute("data-item", item.id);
    detail.appendChild(el("h2", { text: item.title || item.id }));
    var facts = [["item", item.id], ["benchmark", item.benchmark], ["truth", fmt(item.truth)]];
    if (item.difficulty !== null && item.difficulty !== undefined) facts.push(["difficulty", fmt(item.difficulty, 2)]);
    Object.keys(D.flags).forEach(function (f) { if (item.flags[f]) facts.push(["flag", D.flags[f]]); });
    (item.notes || []).forEach(function (n) { facts.push(["note", n]); });
    facts = facts.concat(item.facts || []);
    // the stimulus and the answers first; the item's details (filters, difficulty...) below them
    if (item.question) detail.appendChild(el("p", { class: "question" }, [el("b", { text: "Question: " }), document.createTextNode(item.question)]));
    if (item.options && item.options.length) {
      detail.appendChild(el("ol", { class: "options", type: "A" }, item.options.map(function (o) { return el("li", { text: o }); })));
    }
    detail.appendChild(el("p", { class: "truth" }, [el("b", { text: "Truth: " }), document.createTextNode(fmt(item.truth))]));
    detail.appendChild(el("div", { class: "media" }, (item.media || []).map(player)));
    if (item.timeline) { var tl = timeline(item.timeline); if (tl) detail.appendChild(tl); }
    detail.appendChild(answers(item.answers || []));
    detail.appendChild(el("h3", { text: "Details" }));
    detail.appendChild(el("table", { class: "facts" }, facts.map(function (f) {
      return el("tr", { "data-fact": f[0] }, [el("td", { text: f[0] }), el("td", { text: fmt(f[1]) })]);
    })));
    if (item.transcript) detail.appendChild(el("pre", { class: "transcript", text: item.transcript }));
    detail.scrollTop = 0;
  }

  function fromHash() { show(decodeURIComponent(location.hash.replace(/^#/, ""))); }

  // --- start -------------------------------------------------------------------------------
  var t0 = performance.now();
  document.title = D.title; $("title").textContent = D.title;
  $("notes").textContent = (D.notes || []).join(" · ");
  D.items.forEach(prepare);
  fill($("f-benchmark"), D.filters.benchmark); fill($("f-model"), D.filters.model);
  fill($("f-modality"), D.filters.modality); fill($("f-status"), D.filters.status);
  fill($("f-truth"), D.filters.truth); fill($("f-flag"), Object.keys(D.flags), D.flags);
  ["f-benchmark", "f-model", "f-modality", "f-status", "f-truth", "f-flag", "f-sort"].forEach(function (id) { $(id).addEventListener("change", apply); });
  ["f-difficulty", "f-search"].forEach(function (id) { $(id).addEventListener("input", apply); });
  var pending = false;
  $("list").addEventListener("scroll", function () {
    if (pending) return; pending = true;
    requestAnimationFrame(function () { pending = false; drawRows(); });
  });
  $("list").addEventListener("click", function (e) {
    var row = e.target.closest(".row");
    if (row) location.hash = encodeURIComponent(row.dataset.id);
  });
  window.addEventListener("hashchange", fromHash);
  apply();
  fromHash();
  window.EXPLORER_READY_MS = performance.now() - t0; // the script alone
  window.EXPLORER_READY_AT = performance.now(); // since the navigation started: the page's load
  document.body.setAttribute("data-ready", "1");
})();
