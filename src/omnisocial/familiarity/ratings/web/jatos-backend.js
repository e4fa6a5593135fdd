/* The rating experiment on JATOS (https://www.jatos.org): what the collection server does, done
 * with jatos.js. Loaded by the JATOS study's page after jatos.js and before experiment.js.
 *
 *  - the Prolific ids come from jatos.urlQueryParameters (the study link's query);
 *  - each participant gets a list through the batch session ("os_taken": participants per list),
 *    chosen as the server chooses (collect.allocate_list): of the lists with the fewest
 *    participants, the one whose blocks have the fewest raters, in list order on ties; a changed
 *    batch session (another participant at the same moment) makes the write fail, and the
 *    choice is made again on the new counts;
 *  - every record is appended to the result data as one JSON line (jatos.appendResultData)
 *    before the next screen shows, the first line being the session's header; what is answered
 *    is kept in the study session data, so a reload goes on at the first unanswered trial;
 *  - no record but the consent is stored before consent is given or after it is declined; a
 *    declined consent frees the list and ends the study run;
 *  - the study ends with jatos.endStudyAndRedirect (the completion redirect), or
 *    jatos.endStudyWithoutRedirect when none is configured (the completion screen stays). */
(function () {
  "use strict";
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

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
    const append = (object) => jatos.appendResultData(JSON.stringify(object) + "\n");
    const keep = () => jatos.setStudySessionData({ os_session: session });

    // +1 on a list chosen by `allocate` (listId null) or -1 on listId, retried on a write conflict
    async function changeTaken(listId, delta, ratersPerList) {
      for (let attempt = 0; attempt < 30; attempt++) {
        const taken = jatos.batchSession.get("os_taken") || {};
        const chosen = listId || allocate(lists, taken, ratersPerList);
        if (chosen === null) throw new Error("every list of this experiment has its participants");
        const next = Object.assign({}, taken, { [chosen]: Math.max((taken[chosen] || 0) + delta, 0) });
        try {
          await jatos.batchSession.set("os_taken", next);
          return chosen;
        } catch (error) {
          await sleep(100 + Math.random() * 400); // another participant wrote first: choose again
        }
      }
      throw new Error("the batch session stayed busy; please reload the page");
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
        const saved = (jatos.studySessionData || {}).os_session;
        if (saved && saved.PROLIFIC_PID === pid) {
          session = saved; // a reload: the same session, on at the first unanswered trial
        } else {
          const listId = await changeTaken(null, 1, settings.raters_per_list);
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
        await append(Object.assign({}, record, { session_id: session.session_id }));
        note(session, record);
        await keep();
      },
      declined: () => {
        changeTaken(session.list_id, -1, 0)
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
