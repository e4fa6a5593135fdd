/* The familiarity rating experiment (one modality): consent, instructions, practice, the
 * participant's list, attention checks, questionnaires, completion. Built by
 * omnisocial.familiarity.ratings.experiment; served and stored by `omnisocial rating-server`.
 * Every answer is stored on the server before the next screen shows; a reload asks the server
 * what is answered and goes on at the first unanswered trial. */
(function () {
  "use strict";
  const target = document.getElementById("os-experiment");

  function message(html) {
    target.innerHTML = `<div class="os-message">${html}</div>`;
  }

  async function post(path, body) {
    const response = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
      cache: "no-store",
    });
    const payload = await response.json().catch(() => ({}));
    if (!response.ok) {
      const error = new Error(payload.error || `HTTP ${response.status}`);
      error.status = response.status;
      error.permanent = response.status >= 400 && response.status < 500;
      throw error;
    }
    return payload;
  }

  function fillCode(text, code) {
    return String(text).split("{code}").join(encodeURIComponent(code));
  }

  function completionHtml(completion) {
    // no completion code configured: a screen that says so, never "Your completion code is ."
    return completion.code ? fillCode(completion.html, completion.code) : completion.no_code_html;
  }

  // The collection server (omnisocial rating-server): the session and every record over its API.
  function serverBackend() {
    const query = new URLSearchParams(window.location.search);
    const participant = {
      PROLIFIC_PID: query.get("PROLIFIC_PID") || query.get("participant") || "",
      STUDY_ID: query.get("STUDY_ID") || "",
      SESSION_ID: query.get("SESSION_ID") || "",
    };
    const token = query.get("token") || "";
    let session = null;
    return {
      start: async () => {
        session = await post("api/start", {
          token: token,
          participant: participant,
          list: query.get("list") || "",
          user_agent: navigator.userAgent,
        });
        return session;
      },
      save: (record) =>
        post("api/record", {
          token: token,
          session_id: session.session_id,
          PROLIFIC_PID: participant.PROLIFIC_PID,
          record: record,
        }),
      declined: () => {},
      end: (url) => {
        if (url) window.location.href = url;
      },
    };
  }

  async function main() {
    const study = await (await fetch("study.json", { cache: "no-store" })).json();
    // on JATOS (jatos-backend.js, loaded by the JATOS study's page) the records go to JATOS
    const backend = window.OmnisocialJatos ? window.OmnisocialJatos.backend(study) : serverBackend();
    let session;
    try {
      session = await backend.start();
    } catch (error) {
      message(`<p>${study.messages.cannot_start}</p><p class="os-error">${error.message}</p>`);
      return;
    }
    const done = session.done;
    const save = (record) =>
      // a record carries the time it was given (the click); retries resend it unchanged
      backend.save(Object.assign({ client_time: new Date().toISOString() }, record)).catch((error) => {
        if (error.permanent) {
          message(`<p>${study.messages.refused}</p><p class="os-error">${error.message}</p>`);
        }
        throw error;
      });
    const saveStep = (record) => ({
      type: jsPsychCallFunction,
      async: true,
      func: (finish) => {
        const given = Object.assign({ client_time: new Date().toISOString() }, record());
        const attempt = () =>
          save(given).then(finish, (error) => {
            if (!error.permanent) setTimeout(attempt, 2000);
          });
        attempt();
      },
    });

    const jsPsych = initJsPsych({ display_element: target });
    const timeline = [];
    const texts = {};
    const stimulusOf = async (path) => {
      if (study.modality !== "text") return path;
      if (!(path in texts)) texts[path] = await (await fetch(path)).text();
      return texts[path];
    };
    const ratingTrial = async (record, path, progress) => ({
      type: jsPsychOmnisocialRating,
      modality: study.modality,
      stimulus: await stimulusOf(path),
      prompt: study.question,
      progress: progress,
      choices: study.choices,
      max_replays: study.max_replays,
      play_label: study.labels.play,
      start_label: study.labels.start,
      replay_label: study.labels.replay,
      playing_label: study.labels.playing,
      saving_label: study.labels.saving,
      retry_label: study.labels.retry,
      record: record,
      save: save,
    });

    if (done.complete) {
      message(completionHtml(study.completion));
      return;
    }
    if (!done.consent) {
      timeline.push({
        type: jsPsychHtmlButtonResponse,
        stimulus: study.consent.html,
        choices: [study.consent.agree, study.consent.decline],
        data: { os_step: "consent" },
      });
      timeline.push(
        saveStep(() => ({ kind: "consent", agreed: jsPsych.data.get().last(1).values()[0].response === 0 }))
      );
      timeline.push({
        timeline: [
          {
            type: jsPsychHtmlButtonResponse,
            stimulus: study.consent.declined_html,
            choices: [],
            on_load: () => {
              backend.declined();
              jsPsych.abortExperiment(study.consent.declined_html);
            },
          },
        ],
        conditional_function: () =>
          jsPsych.data.get().filter({ os_step: "consent" }).last(1).values()[0].response !== 0,
      });
    }
    const media = session.trials.map((t) => t.stimulus).concat(study.practice.map((p) => p.stimulus));
    if (study.modality !== "text" && media.length) {
      timeline.push({
        type: jsPsychPreload,
        [study.modality]: media,
        max_load_time: 120000,
        continue_after_error: true,
        message: study.labels.loading,
      });
    }
    if (done.ratings.length === 0) {
      timeline.push({
        type: jsPsychInstructions,
        pages: study.instructions.pages,
        show_clickable_nav: true,
        button_label_next: study.instructions.next,
        button_label_previous: study.instructions.previous,
      });
    }
    const practice = study.practice.filter((p) => !done.practice.includes(p.id));
    for (const [i, item] of practice.entries()) {
      timeline.push(
        await ratingTrial(
          { kind: "practice", practice_id: item.id },
          item.stimulus,
          `${study.labels.practice} ${i + 1} / ${practice.length}`
        )
      );
    }
    if (practice.length && study.practice_end_html) {
      timeline.push({ type: jsPsychHtmlButtonResponse, stimulus: study.practice_end_html, choices: [study.instructions.next] });
    }
    const checks = study.attention_checks;
    const n = session.trials.length;
    for (const trial of session.trials) {
      if (!done.ratings.includes(trial.order)) {
        timeline.push(
          await ratingTrial(
            { kind: "rating", order: trial.order, dyad_id: trial.dyad_id, shown: trial.shown },
            trial.stimulus,
            `${trial.order} / ${n}`
          )
        );
      }
      checks.forEach((check, index) => {
        if (check.after === trial.order && !done.attention.includes(index + 1)) {
          timeline.push({
            type: jsPsychOmnisocialRating,
            modality: "text",
            stimulus: check.prompt,
            choices: study.choices,
            saving_label: study.labels.saving,
            retry_label: study.labels.retry,
            record: { kind: "attention", check: index + 1, expected: check.answer },
            save: save,
          });
        }
      });
    }
    for (const questionnaire of study.questionnaires) {
      if (done.questionnaires.includes(questionnaire.name)) continue;
      timeline.push({
        type: jsPsychSurveyLikert,
        preamble: questionnaire.preamble,
        questions: questionnaire.items.map((item) => ({
          prompt: item.text,
          name: item.id,
          labels: questionnaire.labels,
          required: true,
        })),
        button_label: study.instructions.next,
        scale_width: 700,
        data: { os_questionnaire: questionnaire.name },
      });
      timeline.push(
        saveStep(() => {
          const last = jsPsych.data.get().filter({ os_questionnaire: questionnaire.name }).last(1).values()[0];
          const answers = {};
          // survey-likert gives the index of the chosen label; the stored value is 1..n
          for (const [id, index] of Object.entries(last.response)) answers[id] = index + 1;
          return { kind: "questionnaire", name: questionnaire.name, answers: answers, rt_ms: Math.round(last.rt) };
        })
      );
    }
    timeline.push(saveStep(() => ({ kind: "complete" })));
    timeline.push({
      type: jsPsychHtmlButtonResponse,
      stimulus: completionHtml(study.completion),
      choices: [],
      on_load: () => {
        const url = study.completion.redirect_url
          ? fillCode(study.completion.redirect_url, study.completion.code)
          : "";
        setTimeout(() => backend.end(url), url ? study.completion.redirect_delay_ms : 0);
      },
    });
    jsPsych.run(timeline);
  }

  const run = () => main().catch((error) => message(`<p class="os-error">${error.message}</p>`));
  if (window.OmnisocialJatos) window.OmnisocialJatos.onLoad(run);
  else run();
})();
