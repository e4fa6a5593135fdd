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
      start_label: { type: T.STRING, default: "Press Play to start the recording." },
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
      // playback as it happened: the highest rate set, wall-clock seconds spent playing and the
      // media seconds they advanced (a clip at 16x advances 16 s a second), a seek not the page's
      let maxRate = null;
      let playedWall = 0;
      let playedMedia = 0;
      let seeked = false;
      let segment = null; // {wall, media} while playing
      const closeSegment = () => {
        if (segment && media) {
          playedWall += (performance.now() - segment.wall) / 1000;
          playedMedia += Math.max(media.currentTime - segment.media, 0);
        }
        segment = null;
      };
      let html = '<div class="os-trial">';
      if (trial.progress) html += `<p class="os-progress">${trial.progress}</p>`;
      if (trial.modality === "text") {
        html += `<div class="os-transcript" id="os-stimulus">${escapeHtml(trial.stimulus)}</div>`;
      } else {
        const tag = trial.modality === "video" ? "video" : "audio";
        html += `<${tag} id="os-media" class="os-media" preload="auto" playsinline src="${trial.stimulus}"></${tag}>`;
        // the start prompt and Play button show while the browser blocks autoplay, "Playing..."
        // only once the media's `playing` event says it really plays
        html += `<p class="os-start" id="os-start" hidden>${escapeHtml(trial.start_label)}</p>`;
        html += `<div class="os-media-controls"><button type="button" class="jspsych-btn" id="os-play" hidden>${trial.play_label}</button>`;
        html += `<button type="button" class="jspsych-btn" id="os-replay" hidden>${trial.replay_label}</button></div>`;
        html += `<p class="os-playing" id="os-playing" hidden>${escapeHtml(trial.playing_label)}</p>`;
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
        const clickTime = new Date().toISOString(); // the click's time, not a retry's
        if (media) {
          closeSegment();
          media.pause();
        }
        const round3 = (x) => Math.round(x * 1000) / 1000;
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
          playback_rate: media ? maxRate : null,
          played_s: media ? round3(playedWall) : null,
          media_played_s: media ? round3(playedMedia) : null,
          seeked: media ? seeked : null,
          client_time: clickTime,
        });
        status.textContent = trial.saving_label;
        const attempt = () =>
          trial.save(record).then(
            () => {
              stopKeys();
              display_element.innerHTML = "";
              this.jsPsych.finishTrial(record);
            },
            (error) => {
              if (error && error.permanent) return; // refused for good: the page says so, no retry
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
      const prompt = display_element.querySelector("#os-start");
      const rate = () => (maxRate = Math.max(maxRate || 0, media.playbackRate));
      rate();
      media.addEventListener("ratechange", rate);
      media.addEventListener("playing", () => {
        prompt.hidden = true;
        play.hidden = true;
        playing.hidden = false;
        rate();
        if (!segment) segment = { wall: performance.now(), media: media.currentTime };
      });
      media.addEventListener("pause", closeSegment);
      let pageSeek = false;
      media.addEventListener("seeking", () => {
        if (!pageSeek) seeked = true;
        pageSeek = false;
      });
      const blocked = () => {
        // a browser that blocks autoplay (a reload, a return visit): the participant starts it
        if (answered || !media.paused) return;
        playing.hidden = true;
        prompt.hidden = false;
        play.hidden = false;
        display_element.querySelector(".os-trial").dataset.blocked = "true";
      };
      const start = (again) => {
        play.hidden = true;
        if (playedToEnd && !again) return; // a late Play click never restarts a clip that ended
        const started = media.play();
        if (started && started.catch) {
          started.catch((error) => {
            if (error.name === "NotAllowedError") blocked();
          });
        }
      };
      media.addEventListener("ended", () => {
        playedToEnd = true;
        closeSegment();
        play.hidden = true;
        prompt.hidden = true;
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
        pageSeek = true; // the replay's rewind is the page's own seek
        media.currentTime = 0;
        start(true);
      });
      start(false);
    }
  }
  OmnisocialRatingPlugin.info = info;
  return OmnisocialRatingPlugin;
})(jsPsychModule);
