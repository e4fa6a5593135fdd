/* A stand-in for JATOS's jatos.js, for the tests only (no JATOS server runs here): the calls the
 * rating experiment's JATOS page uses, with the documented names, arguments and Promise results
 * (https://www.jatos.org/jatos.js-Reference.html), talking HTTP to tests/jatos_standin.py,
 * which keeps result data, study session data and the batch session as JATOS does:
 *
 *   jatos.onLoad(callback)                    after the init data arrived
 *   jatos.urlQueryParameters, studyResultId, componentResultId, workerId, batchId, studySessionData
 *   jatos.appendResultData(data)              appends to this component result's data
 *   jatos.setStudySessionData(object)         kept across the study run (a reload gets it back)
 *   jatos.batchSession.get(name) / getAll()   the local copy
 *   jatos.batchSession.set(name, value)       rejected when another participant changed the batch
 *                                             session first (JATOS's versioning); the local copy
 *                                             is then refreshed, as JATOS's WebSocket push does
 *   jatos.endStudyAndRedirect(url, successful, message), jatos.endStudyWithoutRedirect(successful, message)
 */
(function () {
  "use strict";
  const jatos = {};
  let batch = { version: 0, data: {} };
  const callbacks = [];
  let ready = false;

  async function call(path, body) {
    const response = await fetch(`standin/${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers: { "Content-Type": "text/plain; charset=UTF-8" },
      body: body,
      cache: "no-store",
    });
    const text = await response.text();
    if (!response.ok) throw new Error(text || `HTTP ${response.status}`);
    return text ? JSON.parse(text) : null;
  }

  jatos.onLoad = (callback) => (ready ? callback() : callbacks.push(callback));
  jatos.appendResultData = (data) =>
    call(`resultData?componentResultId=${jatos.componentResultId}`, typeof data === "string" ? data : JSON.stringify(data));
  jatos.setStudySessionData = (data) => {
    jatos.studySessionData = data;
    return call("studySessionData", JSON.stringify(data));
  };
  jatos.batchSession = {
    get: (name) => (batch.data[name] === undefined ? undefined : JSON.parse(JSON.stringify(batch.data[name]))),
    getAll: () => JSON.parse(JSON.stringify(batch.data)),
    set: async (name, value) => {
      try {
        batch = await call("batchSession", JSON.stringify({ version: batch.version, name: name, value: value }));
      } catch (error) {
        batch = await call("batchSession");
        throw error;
      }
    },
  };
  const end = (successful, message) =>
    call("end", JSON.stringify({ successful: successful !== false, message: message || "" }));
  jatos.endStudyWithoutRedirect = (successful, message) => end(successful, message);
  jatos.endStudyAndRedirect = (url, successful, message) =>
    end(successful, message).then(() => {
      window.location.href = url;
    });

  call("init").then((init) => {
    Object.assign(jatos, init.ids);
    jatos.urlQueryParameters = init.urlQueryParameters;
    jatos.studySessionData = init.studySessionData;
    batch = init.batchSession;
    ready = true;
    callbacks.splice(0).forEach((callback) => callback());
  });
  window.jatos = jatos;
})();
