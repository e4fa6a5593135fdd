"""Media measurements: probing and decoding files, speech detection, track and audio-video sync.

- `audio`: `probe` (ffprobe stream durations), `load_audio` (mono float32 at a chosen
  rate), `envelope` (RMS per hop), and `MediaError`, the one exception every reader raises
  for a missing, empty, corrupt or unreadable file, with a readable reason.
- `vad`: silero-vad speech segments, run on the ONNX model shipped in the `silero-vad`
  package through onnxruntime (single thread, no torch).
- `sync`: duplicate/desync detection between the two participants' tracks, video motion
  energy, and the audio-video lag.

All external decoding goes through the `ffmpeg`/`ffprobe` command-line tools.
"""
