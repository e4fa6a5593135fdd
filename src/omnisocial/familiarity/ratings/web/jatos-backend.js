/* The rating experiment on JATOS (https://www.jatos.org): what the collection server does, done
 * with jatos.js. Loaded by the JATOS study's page after jatos.js and before experiment.js.
 *
 *  - the Prolific ids come from jatos.urlQueryParameters (the study link's query);
 *  - each participant gets a list through the batch session, chosen as the server chooses
 *    (collect.allocate_list: of the lists with the fewest participants, the one whose blocks
 *    have the fewest raters, in list order on ties). Since 3.9.8 JATOS applies batch-session
 *    patches without a lock (read, version check, write), so two writes at one moment can both
 *    succeed and one be lost, and batchSession.set gives up after 10 s even when the write was
 *    applied. So no shared counter: each participant writes only its own claim, under a key
 *    made of the number JATOS gives each study run once (os_claim_{studyResultId}: {list, ok});
 *    the lists' counts are the claims. A claim is checked after the batch channel has had
 *    time to bring the claims written at the same moment (SETTLE_MS): of the claims on one
 *    list, confirmed ones (ok) come first, then the lower study result id; a claim beyond
 *    raters_per_list chooses again (its key now names the new list: nothing is left behind).
 *    A kept claim is confirmed and checked once more the same way. A claim is written again
 *    when its write timed out, when another claim arrives just after it (JATOS sends patches
 *    in the order it writes them: that one was written after ours and may have read the batch
 *    session before ours landed, erasing it), and whenever another participant's claim
 *    changes while the page is open, so what the server lost comes back;
 *  - every record is appended to the result data as one JSON line (jatos.appendResultData)
 *    before the next screen shows, the first line being the session's header; what is answered
 *    is kept in the study session data, so a reload goes on at the first unanswered trial;
 *  - a refusal that cannot succeed on retry (HTTP 400, 403, or 413 over JATOS's result-data
 *    limit, 5 MB by default) is permanent: the page says so and what to do, and the study run is
 *    ended as failed with the reason as its message (JATOS keeps it with the study result);
 *    anything else (no connection, a timeout, a server error) is retried;
 *  - no record but the consent is stored before consent is given or after it is declined; a
 *    declined consent frees the list and ends the study run;
 *  - the study ends with jatos.endStudyAndRedirect (the completion redirect), or
 *    jatos.endStudyWithoutRedirect when none is configured (the completion screen stays). */
(function () {
  "use strict";
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  const CLAIM = "os_claim_";
  const SETTLE_MS = 2000; // the batch channel brings claims written at the same moment meanwhile
  const OVERLAP_MS = 300; // a claim written just after ours arrives within this time of our answer
  const PERMANENT = [400, 403, 413]; // JATOS's refusals that a retry cannot change

  function allocate(lists, perList, ratersPerList) {
    const ids = Object.keys(lists);
    const perBlock = {};
    for (const id of ids) {
      for (const block of lists[id].blocks) perBlock[block] = (perBlock[block] || 0) + (perList[id] || 0);
    }
    const need = (id) => {
      const counts = lists[id].blocks.map((b) => perBlock[b] || 0);
      return [perList[id] || 0, Math.max(...counts), counts.reduce((a, b) => a + b, 0), ids.indexOf(id)];
    };
    const open = ids.filter((id) => (perList[id] || 0) < ratersPerList);
    if (!open.length) return null;
    const before = (a, b) => {
      for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] < b[i];
      return false;
    };
    return open.reduce((best, id) => (before(need(id), need(best)) ? id : best));
  }

  // the claims in the batch session: {studyResultId: {list, ok}}, freed claims left out
  function claimsOf(data) {
    const claims = {};
    for (const [key, value] of Object.entries(data || {})) {
      if (key.startsWith(CLAIM) && value && value.list) claims[key.slice(CLAIM.length)] = value;
    }
    return claims;
  }

  // the claims that hold their lists: of the claims on one list, confirmed ones first, then the
  // lower study result id, up to raters_per_list
  function holding(claims, ratersPerList) {
    const held = {};
    const order = Object.keys(claims).sort(
      (a, b) => (claims[b].ok ? 1 : 0) - (claims[a].ok ? 1 : 0) || Number(a) - Number(b)
    );
    const perList = {};
    for (const id of order) {
      const list = claims[id].list;
      if ((perList[list] || 0) < ratersPerList) {
        perList[list] = (perList[list] || 0) + 1;
        held[id] = claims[id];
      }
    }
    return held;
  }

  // a jatos.js call's jQuery promise as an Error carrying JATOS's HTTP status
  function settled(deferred) {
    return new Promise((resolve, reject) => {
      deferred.then(resolve, (message, status) => {
        const error = new Error(String(message || "the JATOS server did not answer"));
        error.status = Number(status) || 0;
        error.permanent = PERMANENT.includes(error.status);
        reject(error);
      });
    });
  }

  function note(session, record) {
    const done = session.done;
    const add = (list, value) => {
      if (!list.includes(value)) list.push(value);
    };
    if (record.kind === "consent") {
      session.consent = record.agreed;
      done.consent = record.agreed === true;
    } else if (record.kind === "practice") add(done.practice, record.practice_id);
    else if (record.kind === "rating") add(done.ratings, record.order);
    else if (record.kind === "attention") add(done.attention, record.check);
    else if (record.kind === "questionnaire") add(done.questionnaires, record.name);
    else if (record.kind === "complete") done.complete = true;
  }

  function backend(study) {
    let session = null;
    let lists = null;
    const append = (object) => settled(jatos.appendResultData(JSON.stringify(object) + "\n"));
    const keep = () => settled(jatos.setStudySessionData({ os_session: session }));
    // a permanent refusal or no list: JATOS keeps the reason as the failed study run's message
    const fail = (reason) => settled(jatos.endStudyWithoutRedirect(false, String(reason).slice(0, 250))).catch(() => {});

    // each participant writes only its own key: JATOS's version check (which the unlocked
    // write lets two patches pass anyway) would only turn concurrent claims into retries
    jatos.batchSessionVersioning = false;
    let me = null; // this study run's id, the key of its claim
    let mine = null; // the claim this page holds: {list, ok}
    let arrived = 0; // claims arrived through the batch channel, counted
    let mineArrived = 0; // the count when our own claim last arrived
    let foreignArrived = 0; // the count when another participant's claim last arrived
    let seen = {};
    let reasserting = false;
    const claims = () => Object.assign(claimsOf(jatos.batchSession.getAll()), mine && mine.list ? { [me]: mine } : {});

    // write `mine` until the server surely has it (module docstring); one write at a time
    let writing = Promise.resolve();
    const persist = () => (writing = writing.then(writeClaim, writeClaim));
    async function writeClaim() {
      for (let attempt = 0; attempt < 60; attempt++) {
        const value = mine;
        const before = arrived;
        let answered = false;
        try {
          await jatos.batchSession.set(CLAIM + me, value);
          answered = true;
        } catch (error) {
          // no answer within 10 s (it may have been applied: written again) or no open channel
        }
        await sleep(OVERLAP_MS);
        // JATOS sends a patch to everyone before it answers its sender, in the order it wrote
        // them: a claim arriving after ours was written after ours and may have erased it
        const overlapped = mineArrived <= before || foreignArrived > mineArrived;
        if (answered && !overlapped && value === mine) return;
        await sleep(200 + Math.random() * 800);
      }
      throw new Error("the batch session stayed busy; please reload the page");
    }

    // another participant's claim arrived: a write of ours on its way may have overlapped it
    // (writeClaim writes again); a changed one: write ours again, the server may have lost it
    function watch() {
      seen = claimsOf(jatos.batchSession.getAll());
      jatos.onBatchSession((path) => {
        if (!path.startsWith("/" + CLAIM)) return;
        arrived += 1;
        if (path === "/" + CLAIM + me) {
          mineArrived = arrived;
          return;
        }
        foreignArrived = arrived;
        const now = claimsOf(jatos.batchSession.getAll());
        const id = path.slice(CLAIM.length + 1);
        const changed = JSON.stringify(now[id]) !== JSON.stringify(seen[id]);
        seen = now;
        if (changed && mine && mine.ok && !reasserting) {
          reasserting = true; // one write for a burst of changes
          setTimeout(() => {
            reasserting = false;
            persist();
          }, 100 + Math.random() * 500);
        }
      });
    }

    async function takeList(ratersPerList) {
      for (let round = 0; round < 60; round++) {
        const others = claims();
        delete others[me];
        const held = holding(others, ratersPerList);
        const perList = {};
        for (const claim of Object.values(held)) perList[claim.list] = (perList[claim.list] || 0) + 1;
        const chosen = allocate(lists, perList, ratersPerList);
        if (chosen === null) {
          if (mine && mine.list) {
            mine = { list: null, ok: false }; // a claim that lost: its list is not ours
            await persist();
          }
          // every list is held; one whose holder has not confirmed yet may still come free
          if (Object.values(held).every((claim) => claim.ok)) {
            throw new Error("every list of this experiment has its participants");
          }
          await sleep(SETTLE_MS);
          continue;
        }
        mine = { list: chosen, ok: false };
        await persist();
        await sleep(SETTLE_MS);
        if (!(me in holding(claims(), ratersPerList))) continue;
        mine = { list: chosen, ok: true };
        await persist();
        await sleep(SETTLE_MS);
        if (me in holding(claims(), ratersPerList)) return chosen;
      }
      throw new Error("no list could be given; please reload the page");
    }

    return {
      start: async () => {
        lists = await (await fetch("lists.json", { cache: "no-store" })).json();
        const settings = await (await fetch("jatos.json", { cache: "no-store" })).json();
        const query = jatos.urlQueryParameters || {};
        const pid = query.PROLIFIC_PID || query.participant || "";
        if (!/^[A-Za-z0-9_-]{1,64}$/.test(pid)) {
          throw new Error("PROLIFIC_PID missing or malformed in the study link");
        }
        me = String(jatos.studyResultId);
        watch();
        const saved = (jatos.studySessionData || {}).os_session;
        if (saved && saved.PROLIFIC_PID === pid) {
          session = saved; // a reload: the same session, on at the first unanswered trial
          mine = { list: session.consent === false ? null : session.list_id, ok: true };
        } else {
          let listId;
          try {
            listId = await takeList(settings.raters_per_list);
          } catch (error) {
            await fail(`no list: ${error.message}`);
            throw error;
          }
          session = {
            session_id: `${listId}-${jatos.studyResultId}`,
            list_id: listId,
            PROLIFIC_PID: pid,
            consent: null,
            done: { consent: false, practice: [], ratings: [], attention: [], questionnaires: [], complete: false },
          };
          await append({
            kind: "session",
            session_id: session.session_id,
            modality: study.modality,
            list_id: listId,
            PROLIFIC_PID: pid,
            STUDY_ID: query.STUDY_ID || "",
            SESSION_ID: query.SESSION_ID || "",
            started_at: new Date().toISOString(),
            user_agent: navigator.userAgent.slice(0, 300),
            jatos: { studyResultId: jatos.studyResultId, workerId: jatos.workerId, batchId: jatos.batchId },
          });
          await keep();
        }
        return { session_id: session.session_id, list_id: session.list_id, trials: lists[session.list_id].trials, done: session.done };
      },
      save: async (record) => {
        if (record.kind !== "consent" && session.consent !== true) {
          const error = new Error(`no consent given: a ${record.kind} record is not stored`);
          error.permanent = true;
          throw error;
        }
        try {
          await append(Object.assign({}, record, { session_id: session.session_id }));
          note(session, record);
          await keep();
        } catch (error) {
          if (error.permanent) await fail(`refused (HTTP ${error.status}) at a ${record.kind} record: ${error.message}`);
          throw error;
        }
      },
      declined: () => {
        mine = { list: null, ok: true }; // the list is free again
        persist()
          .catch(() => {})
          .then(() => jatos.endStudyWithoutRedirect(true, "consent declined"));
      },
      end: (url) => {
        if (url) jatos.endStudyAndRedirect(url, true, "complete");
        else jatos.endStudyWithoutRedirect(true, "complete");
      },
    };
  }

  window.OmnisocialJatos = { onLoad: (callback) => jatos.onLoad(callback), backend: backend, allocate: allocate };
})();
