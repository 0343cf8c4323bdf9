package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/voiced/voiced/audio"
)

const (
	rate16k = 16000
	rate24k = 24000
	// frameMs is the pacing unit: a microphone's 20 ms frame.
	frameMs = 20
)

// recording is one speech file at 16 kHz.
type recording struct {
	name string
	pcm  []float32
}

// utterance is a stretch of real speech cut from a recording, with the sample where the speech
// ends (the true end of speech that the server's turn detector is measured against).
type utterance struct {
	name  string
	pcm   []float32 // 16 kHz: lead-in, speech, then nothing (the caller appends silence)
	start int       // samples of pcm before the speech (the lead-in)
	end   int       // samples of pcm up to the end of speech
}

// loadRecordings reads the named files, or every *.pcm in dir (float32 LE 16 kHz, the format of
// silero-vad-go's testfiles). A .wav file is decoded and resampled to 16 kHz; a .raw file is
// PCM16LE mono 16 kHz (pocketsphinx-testdata's recordings).
func loadRecordings(files []string, dir string) ([]recording, error) {
	if len(files) == 0 {
		if dir == "" {
			return nil, errors.New("no speech: name files with -audio, or set VOICED_SILERO_TESTFILES (the silero-vad-go module's testfiles/)")
		}
		var err error
		files, err = filepath.Glob(filepath.Join(dir, "*.pcm"))
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("no *.pcm speech in %s", dir)
		}
		sort.Strings(files)
	}
	var out []recording
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var pcm []float32
		switch strings.ToLower(filepath.Ext(f)) {
		case ".pcm", ".f32":
			pcm, err = float32LE(b)
		case ".raw":
			pcm, err = audio.PCM16ToFloat32(b)
		case ".wav":
			var r int
			pcm, r, err = audio.DecodeWAVBytes(b)
			if err == nil && r != rate16k {
				pcm = audio.Resample(pcm, r, rate16k)
			}
		default:
			err = errors.New("want .pcm (float32 LE 16 kHz), .raw (PCM16LE 16 kHz) or .wav")
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if len(pcm) == 0 {
			return nil, fmt.Errorf("%s: no samples", f)
		}
		out = append(out, recording{name: filepath.Base(f), pcm: pcm})
	}
	return out, nil
}

func float32LE(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("%d bytes is not whole float32 samples", len(b))
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out, nil
}

// Segmentation of a recording into utterances, by 20 ms frame energy: a frame is speech when its
// RMS is within speechDB of the loudest frame; speech runs closer than joinMs are one utterance.
const (
	speechDB = -30.0
	joinMs   = 600
	leadMs   = 300
)

// splitUtterances cuts each recording at its pauses. The end of speech is the last sample of the
// last frame above the threshold: a 20 ms bound, measured on the audio the server receives.
func splitUtterances(recs []recording) []utterance {
	var out []utterance
	const fl = rate16k * frameMs / 1000
	for _, r := range recs {
		nf := len(r.pcm) / fl
		rms := make([]float64, nf)
		peak := 0.0
		for i := range nf {
			rms[i] = audio.RMS(r.pcm[i*fl : (i+1)*fl])
			peak = max(peak, rms[i])
		}
		if peak == 0 {
			continue
		}
		thr := peak * math.Pow(10, speechDB/20)
		type run struct{ a, b int } // frames [a, b)
		var runs []run
		for i := 0; i < nf; i++ {
			if rms[i] < thr {
				continue
			}
			j := i
			for j < nf && rms[j] >= thr {
				j++
			}
			if n := len(runs); n > 0 && (i-runs[n-1].b)*frameMs < joinMs {
				runs[n-1].b = j
			} else {
				runs = append(runs, run{i, j})
			}
			i = j
		}
		for k, u := range runs {
			if (u.b-u.a)*frameMs < 200 {
				continue // a click, not an utterance
			}
			from := max(u.a*fl-rate16k*leadMs/1000, 0)
			if k > 0 {
				from = max(from, runs[k-1].b*fl)
			}
			end := u.b * fl
			out = append(out, utterance{
				name:  fmt.Sprintf("%s#%d", r.name, k),
				pcm:   r.pcm[from:end],
				start: u.a*fl - from,
				end:   end - from,
			})
		}
	}
	return out
}

// pcm16Bytes renders float samples as PCM16LE.
func pcm16Bytes(pcm []float32) []byte { return audio.Float32ToPCM16(pcm) }

// to24k resamples 16 kHz to 24 kHz (the realtime socket's pcm16 rate).
func to24k(pcm []float32) []float32 { return audio.Resample(pcm, rate16k, rate24k) }
