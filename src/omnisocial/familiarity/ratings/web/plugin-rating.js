/* One rating trial of the familiarity study: the stimulus (a transcript shown, or a recording
 * played to its end), then a forced choice by button or key. The answer is sent to the collection
 * server (trial.save) and the trial ends only once the server has stored it, so a closed tab
 * never loses an answer whose next screen appeared. */
var jsPsychOmnisocialRating = (function (jspsych) {
  "use strict";
  const T = jspsych.ParameterType;
  const info = {
    name: "omnisocial-rating",
    version: "1.0.0",
    parameters: {
      modality: { type: T.STRING, default: "text" },
      /** transcript text (text) or the media file's URL (audio, video) */
      stimulus: { type: T.STRING, default: "" },
      prompt: { type: T.HTML_STRING, default: "" },
      progress: { type: T.HTML_STRING, default: "" },
      /** [{value, label, key}] */
      choices: { type: T.COMPLEX, array: true, default: [] },
      max_replays: { type: T.INT, default: 0 },
      play_label: { type: T.STRING, default: "Play" },
      replay_label: { type: T.STRING, default: "Play again" },
      playing_label: { type: T.STRING, default: "" },
      saving_label: { type: T.STRING, default: "Saving..." },
      retry_label: { type: T.STRING, default: "No connection to the server; trying again..." },
      /** fields stored with the answer (kind, order, dyad_id, ...) */
      record: { type: T.OBJECT, default: {} },
      /** function(record) -> Promise, resolved once the server stored the record */
      save: { type: T.FUNCTION, default: null },
    },
    data: {},
  };

  function escapeHtml(text) {
    const div = document.createElement("div");
    div.textContent = text;
    return div.innerHTML;
  }

  class OmnisocialRatingPlugin {
    constructor(jsPsych) {
      this.jsPsych = jsPsych;
    }

    trial(display_element, trial) {
      const onset = performance.now();
      let enabledAt = null;
      let replays = 0;
      let playedToEnd = false;
      let answered = false;
      let media = null;
      let stopKeys = () => {};
      let html = '<div class="os-trial">';
      if (trial.progress) html += `<p class="os-progress">${trial.progress}</p>`;
      if (trial.modality === "text") {
        html += `<div class="os-transcript" id="os-stimulus">${escapeHtml(trial.stimulus)}</div>`;
      } else {
        const tag = trial.modality === "video" ? "video" : "audio";
        html += `<${tag} id="os-media" class="os-media" preload="auto" playsinline src="${trial.stimulus}"></${tag}>`;
        html += `<div class="os-media-controls"><button type="button" class="jspsych-btn" id="os-play" hidden>${trial.play_label}</button>`;
        html += `<button type="button" class="jspsych-btn" id="os-replay" hidden>${trial.replay_label}</button></div>`;
        html += `<p class="os-playing" id="os-playing">${escapeHtml(trial.playing_label)}</p>`;
      }
      if (trial.prompt) html += `<div class="os-prompt">${trial.prompt}</div>`;
      html += '<div class="os-choices">';
      trial.choices.forEach((choice, i) => {
        const key = choice.key ? ` <span class="os-key">[${escapeHtml(choice.key.toUpperCase())}]</span>` : "";
        html += `<button type="button" class="jspsych-btn os-choice" id="os-choice-${i}" data-value="${choice.value}" disabled>${escapeHtml(choice.label)}${key}</button>`;
      });
      html += '</div><p class="os-status" id="os-status"></p></div>';
      display_element.innerHTML = html;
      const buttons = Array.from(display_element.querySelectorAll(".os-choice"));
      const status = display_element.querySelector("#os-status");

      const enable = () => {
        if (enabledAt === null) enabledAt = performance.now();
        buttons.forEach((b) => (b.disabled = answered));
      };

      const respond = (index, input) => {
        if (answered || enabledAt === null) return;
        answered = true;
        const now = performance.now();
        buttons.forEach((b) => (b.disabled = true));
        const choice = trial.choices[index];
        const record = Object.assign({}, trial.record, {
          response: choice.value,
          label: choice.label,
          input: input,
          rt_ms: Math.round(now - enabledAt),
          rt_from_onset_ms: Math.round(now - onset),
          replays: replays,
          media_ended: trial.modality === "text" ? null : playedToEnd,
          media_duration_s: media && isFinite(media.duration) ? media.duration : null,
        });
        if (media) media.pause();
        status.textContent = trial.saving_label;
        const attempt = () =>
          trial.save(record).then(
            () => {
              stopKeys();
              display_element.innerHTML = "";
              this.jsPsych.finishTrial(record);
            },
            () => {
              status.textContent = trial.retry_label;
              this.jsPsych.pluginAPI.setTimeout(attempt, 2000);
            }
          );
        attempt();
      };

      buttons.forEach((b, i) => b.addEventListener("click", () => respond(i, "click")));
      // keys on the whole document: focus leaves jsPsych's display element when a button is removed
      const keyed = trial.choices.map((c) => (c.key || "").toLowerCase());
      const onKey = (event) => {
        if (event.repeat || event.ctrlKey || event.metaKey || event.altKey) return;
        const i = keyed.indexOf(String(event.key).toLowerCase());
        if (i >= 0 && keyed[i]) respond(i, "key");
      };
      document.addEventListener("keydown", onKey);
      stopKeys = () => document.removeEventListener("keydown", onKey);

      if (trial.modality === "text") {
        enable();
        return;
      }
      media = display_element.querySelector("#os-media");
      const play = display_element.querySelector("#os-play");
      const replay = display_element.querySelector("#os-replay");
      const playing = display_element.querySelector("#os-playing");
      media.addEventListener("playing", () => (playing.hidden = false));
      const start = (again) => {
        play.hidden = true;
        if (playedToEnd && !again) return; // a late Play click never restarts a clip that ended
        const started = media.play();
        if (started && started.catch) {
          // a browser that blocks autoplay: the participant starts the clip
          started.catch((error) => {
            if (error.name === "NotAllowedError" && !answered) play.hidden = false;
          });
        }
      };
      media.addEventListener("ended", () => {
        playedToEnd = true;
        play.hidden = true;
        playing.hidden = true;
        display_element.querySelector(".os-trial").dataset.ended = String(replays + 1);
        replay.hidden = replays >= trial.max_replays;
        enable();
      });
      play.addEventListener("click", () => start(false));
      replay.addEventListener("click", () => {
        if (replays >= trial.max_replays || answered) return;
        replays += 1;
        replay.hidden = true;
        media.currentTime = 0;
        start(true);
      });
      start(false);
    }
  }
  OmnisocialRatingPlugin.info = info;
  return OmnisocialRatingPlugin;
})(jsPsychModule);
