"""Media measurements: probing and decoding files, speech detection, track and audio-video sync.

- `audio`: `probe` (ffprobe stream durations), `load_audio` (mono float32 at a chosen
  rate), `envelope` (RMS per hop), and `MediaError`, the one exception every reader raises
  for a missing, empty, corrupt or unreadable file, with a readable reason.
- `vad`: silero-vad speech segments, run on the ONNX model shipped in the `silero-vad`
  package through onnxruntime (single thread, no torch).
- `sync`: duplicate/desync detection between the two participants' tracks, video motion
  energy, and the audio-video lag.

- `ffmpeg_run`: the one route to the `ffmpeg`/`ffprobe` executables. Commands are
  ffmpeg-python graphs (`import ffmpeg`), run with a timeout by `run_ffmpeg`, `probe_json`
  and `pipe_frames` (raw frames on an encoder's stdin); `MediaError` lives there.
- `pipe`: raw-frame helpers for encoders (`yuv420p`, `run_with_stdin`).

All external decoding goes through `ffmpeg_run`.
"""
