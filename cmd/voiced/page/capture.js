// The microphone's AudioWorklet: resamples the context's rate to 24 kHz with a windowed-sinc
// low-pass (Blackman, 8 zero crossings a side), converts to PCM16 (x·32768, rounded, clipped)
// and posts one chunk of processorOptions.chunkSamples (960 = 40 ms) at a time, with its RMS.
"use strict";

const ZERO_CROSSINGS = 8;

class Capture extends AudioWorkletProcessor {
  constructor(options) {
    super();
    const o = (options && options.processorOptions) || {};
    this.step = sampleRate / (o.rate || 24000); // input samples per output sample
    // Cutoff in cycles per input sample: a little under the lower of the two Nyquists.
    this.cutoff = 0.5 * Math.min(1, 1 / this.step) * 0.92;
    this.halfWidth = ZERO_CROSSINGS / (2 * this.cutoff); // in input samples
    this.buf = new Float32Array(16384);
    this.len = 0;
    this.base = 0; // buf[i] is input sample base+i
    this.t = 0; // input position of the next output sample
    this.size = o.chunkSamples || 960;
    this.chunk = new Int16Array(this.size);
    this.n = 0;
    this.sumSq = 0;
  }

  kernel(d) {
    const u = d / this.halfWidth;
    if (u <= -1 || u >= 1) return 0;
    const x = 2 * this.cutoff * d;
    const sinc = x === 0 ? 1 : Math.sin(Math.PI * x) / (Math.PI * x);
    const window = 0.42 + 0.5 * Math.cos(Math.PI * u) + 0.08 * Math.cos(2 * Math.PI * u);
    return 2 * this.cutoff * sinc * window;
  }

  process(inputs) {
    const input = inputs[0];
    if (!input || input.length === 0) return true; // no track yet
    const ch = input[0];
    if (this.len + ch.length > this.buf.length) { // never in practice: len stays near halfWidth*2+128
      const grown = new Float32Array(this.buf.length * 2);
      grown.set(this.buf.subarray(0, this.len));
      this.buf = grown;
    }
    this.buf.set(ch, this.len);
    this.len += ch.length;
    const last = this.base + this.len - 1;
    while (this.t + this.halfWidth <= last) {
      const lo = Math.max(this.base, Math.ceil(this.t - this.halfWidth));
      const hi = Math.floor(this.t + this.halfWidth);
      let acc = 0;
      for (let i = lo; i <= hi; i++) acc += this.buf[i - this.base] * this.kernel(this.t - i);
      this.emit(acc);
      this.t += this.step;
    }
    const drop = Math.floor(this.t - this.halfWidth) - this.base;
    if (drop > 0) {
      this.buf.copyWithin(0, drop, this.len);
      this.len -= drop;
      this.base += drop;
    }
    return true;
  }

  emit(v) {
    const s = Math.round(v * 32768);
    this.chunk[this.n++] = s > 32767 ? 32767 : s < -32768 ? -32768 : s;
    this.sumSq += v * v;
    if (this.n === this.size) {
      const out = this.chunk;
      this.port.postMessage({ pcm: out.buffer, rms: Math.sqrt(this.sumSq / this.size) }, [out.buffer]);
      this.chunk = new Int16Array(this.size); // out's buffer now belongs to the page
      this.n = 0;
      this.sumSq = 0;
    }
  }
}

registerProcessor("voiced-capture", Capture);
