// Captions from POST /v1/audio/transcriptions (issue 20 item 2) read by real subtitle parsers: the
// official openai package asks for verbose_json with segment timestamps, then srt and vtt, for one
// file; the srt is parsed by the npm package subtitle (parseSync), the vtt by webvtt-parser (the
// W3C parser, which also reports every syntax error it finds).
// Usage: VOICED_BASE_URL=http://host:port/v1 VOICED_API_KEY=<token> node captions.mjs <audio file>
// Prints one JSON line: {segments: [{start, end, text}], srt: [{start, end, text}] (seconds),
// vtt: [{start, end, text}], vttErrors: [..]}.
import fs from 'node:fs';
import OpenAI from 'openai';
import subtitle from 'subtitle';
import webvtt from 'webvtt-parser';

const client = new OpenAI({ baseURL: process.env.VOICED_BASE_URL, apiKey: process.env.VOICED_API_KEY, maxRetries: 0 });
const file = process.argv[2];
const ask = (format, extra = {}) => client.audio.transcriptions.create({
  file: fs.createReadStream(file), model: 'whisper-1', response_format: format, ...extra,
});

const verbose = await ask('verbose_json', { timestamp_granularities: ['segment'] });
const srt = await ask('srt');
const vtt = await ask('vtt');
if (typeof srt !== 'string' || typeof vtt !== 'string') throw new Error(`srt/vtt not text: ${typeof srt} ${typeof vtt}`);

const srtCues = subtitle.parseSync(srt).filter((n) => n.type === 'cue')
  .map((n) => ({ start: n.data.start / 1000, end: n.data.end / 1000, text: n.data.text }));
const parsed = new webvtt.WebVTTParser().parse(vtt, 'metadata');
console.log(JSON.stringify({
  segments: verbose.segments.map((s) => ({ start: s.start, end: s.end, text: s.text })),
  srt: srtCues,
  vtt: parsed.cues.map((c) => ({ start: c.startTime, end: c.endTime, text: c.text })),
  vttErrors: parsed.errors,
}));
