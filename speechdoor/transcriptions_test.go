package speechdoor

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/speechcore/fixture"
)

// wavBytes writes pcm (mono) as a PCM16 WAV at rate with channels copies of each sample.
func wavBytes(pcm []float32, rate, channels int) []byte {
	s := audio.Float32ToInt16(pcm)
	var data []byte
	for _, v := range s {
		for c := 0; c < channels; c++ {
			data = binary.LittleEndian.AppendUint16(data, uint16(v))
		}
	}
	return append(audio.WAVHeader(rate, channels, 16, len(data)), data...)
}

func postTranscription(t *testing.T, h *hearingServer, file []byte, fields map[string]string) (*http.Response, []byte) {
	t.Helper()
	return postTranscriptionAs(t, h, file, "application/octet-stream", fields)
}

// postTranscriptionAs posts file as the form's 'file' part with contentType (its name is always
// audio.wav: the door reads bytes, not names).
func postTranscriptionAs(t *testing.T, h *hearingServer, file []byte, contentType string, fields map[string]string) (*http.Response, []byte) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for k, v := range fields {
		mw.WriteField(k, v)
	}
	if file != nil {
		hdr := textproto.MIMEHeader{}
		hdr.Set("Content-Disposition", `form-data; name="file"; filename="audio.wav"`)
		hdr.Set("Content-Type", contentType)
		fw, _ := mw.CreatePart(hdr)
		fw.Write(file)
	}
	mw.Close()
	resp, err := http.Post(h.srv.URL+"/v1/audio/transcriptions", mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp, out
}

func TestTranscriptionsFormats(t *testing.T) {
	h := newHearingServer(t, Config{})
	pcm16k, phonemes := codecSpeech(t, sttSentence)
	ids := fixture.PhonemeIDs(sttSentence)
	pcm24k := fixture.Waveform(ids, 1)
	pcm48k := audio.Resample(pcm24k, 24000, 48000)
	tests := map[string]struct {
		file        []byte
		format      string
		contentType string
	}{
		"wav 16 kHz mono, json":             {wavBytes(pcm16k, 16000, 1), "", "application/json"},
		"wav 24 kHz mono, text":             {wavBytes(pcm24k, 24000, 1), "text", "text/plain; charset=utf-8"},
		"wav 48 kHz stereo, verbose_json":   {wavBytes(pcm48k, 48000, 2), "verbose_json", "application/json"},
		"raw PCM16 16 kHz (not RIFF), json": {audio.Float32ToPCM16(pcm16k), "json", "application/json"},
		"wav 44.1 kHz stereo, json":         {wavBytes(audio.Resample(pcm24k, 24000, 44100), 44100, 2), "json", "application/json"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			fields := map[string]string{"model": "whisper-1"}
			if tc.format != "" {
				fields["response_format"] = tc.format
			}
			partType := "audio/wav"
			if strings.HasPrefix(name, "raw") {
				partType = "audio/pcm"
			}
			resp, body := postTranscriptionAs(t, h, tc.file, partType, fields)
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != tc.contentType {
				t.Fatalf("%d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
			var text string
			switch tc.format {
			case "text":
				text = strings.TrimSuffix(string(body), "\n")
			case "verbose_json":
				var v verboseTranscription
				if err := json.Unmarshal(body, &v); err != nil {
					t.Fatal(err)
				}
				if v.Task != "transcribe" || v.Language != "english" || len(v.Segments) != 1 || v.Segments[0].Start != 0 || v.Duration < 3 {
					t.Errorf("verbose %+v", v)
				}
				text = v.Text
			default:
				var v struct{ Text string }
				if err := json.Unmarshal(body, &v); err != nil {
					t.Fatal(err)
				}
				text = v.Text
			}
			if text != phonemes {
				t.Errorf("text %q, want %q", text, phonemes)
			}
		})
	}
}

// TestTranscriptionsRealWAV reads whisper.cpp's jfk.wav (a real file, 16 kHz mono s16). The
// fixture Whisper makes deterministic nonsense of real speech; the file must parse and decode.
func TestTranscriptionsRealWAV(t *testing.T) {
	dir := os.Getenv("VOICED_SHARED_DATA")
	if dir == "" {
		t.Skip("VOICED_SHARED_DATA unset: the reference recording is not available")
	}
	wav, err := os.ReadFile(filepath.Join(dir, "whisper", "jfk.wav"))
	if os.IsNotExist(err) {
		t.Skip("jfk.wav absent from VOICED_SHARED_DATA: skipping the real-file check")
	}
	if err != nil {
		t.Fatal(err)
	}
	h := newHearingServer(t, Config{})
	resp, body := postTranscription(t, h, wav, map[string]string{"response_format": "verbose_json"})
	var v verboseTranscription
	if resp.StatusCode != 200 || json.Unmarshal(body, &v) != nil || math.Abs(v.Duration-11) > 0.1 {
		t.Fatalf("%d %.300s", resp.StatusCode, body)
	}
}

func TestSubtitles(t *testing.T) {
	segs := []verboseSegment{{Start: 0, End: 30, Text: " ab"}, {Start: 30, End: 30, Text: " "}, {Start: 30, End: 3725.5, Text: " cd"}}
	tests := map[string]string{
		"srt": "1\n00:00:00,000 --> 00:00:30,000\nab\n\n2\n00:00:30,000 --> 01:02:05,500\ncd\n\n",
		"vtt": "WEBVTT\n\n00:00:00.000 --> 00:00:30.000\nab\n\n00:00:30.000 --> 01:02:05.500\ncd\n\n",
	}
	for format, want := range tests {
		if got := subtitles(format, segs); got != want {
			t.Errorf("%s:\n%q\nwant\n%q", format, got, want)
		}
	}
}

func TestTranscriptionsOver30sInWindows(t *testing.T) {
	h := newHearingServer(t, Config{})
	// 375 phoneme slots of 80 ms fill a 30 s window exactly: 360 phonemes and 15 of silence
	// (pad id 0), then 50 more phonemes in the second window.
	first := strings.Repeat("ə", 360)
	second := strings.Repeat("ɪ", 50)
	ids := fixture.PhonemeIDs(first)
	ids = append(ids, make([]int, 15)...)
	ids = append(ids, fixture.PhonemeIDs(second)...)
	pcm := audio.Resample(fixture.Waveform(ids, 1), fixture.SampleRate, audio.WhisperSampleRate)
	resp, body := postTranscription(t, h, wavBytes(pcm, 16000, 1), map[string]string{"response_format": "verbose_json"})
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	var v verboseTranscription
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	if v.Text != first+" "+second || len(v.Segments) != 2 || v.Segments[1].Start != 30 {
		t.Fatalf("text %q (%d segments, second starts %v)", v.Text, len(v.Segments), v.Segments)
	}
}

func TestTranscriptionsRefusals(t *testing.T) {
	h := newHearingServer(t, Config{})
	pcm, _ := codecSpeech(t, "ə")
	wav := wavBytes(pcm, 16000, 1)
	adpcm := append([]byte(nil), wav...)
	binary.LittleEndian.PutUint16(adpcm[20:], 2) // format tag 2: MS ADPCM
	tests := map[string]struct {
		file   []byte
		fields map[string]string
		status int
		code   string
	}{
		"no file":              {nil, nil, 400, "missing_file"},
		"empty upload":         {[]byte{}, nil, 400, "empty_upload"},
		"broken WAV header":    {[]byte("RIFF\x10\x00\x00\x00WAVEjunkjunk"), nil, 400, "invalid_wav"},
		"unsupported encoding": {adpcm, nil, 400, "unsupported_encoding"},
		"WAV header, no data":  {audio.WAVHeader(16000, 1, 16, 0), nil, 400, "empty_upload"},
		"raw PCM not declared": {audio.Float32ToPCM16(pcm), nil, 415, "unsupported_audio_format"},
		"unknown format":       {wav, map[string]string{"response_format": "mp3"}, 400, "unsupported_response_format"},
		// 3,601 s of 8-bit 1 kHz: 3.6 MB, 230 MB once decoded at 16 kHz (the whole was before).
		"over an hour of audio": {append(audio.WAVHeader(1000, 1, 8, 3601*1000), make([]byte, 3601*1000)...), nil, 413, "audio_too_long"},
		"a field over 4 KiB":    {wav, map[string]string{"prompt": strings.Repeat("p", 5000)}, 400, "invalid_form"},
		"too many parts": {wav, func() map[string]string {
			m := map[string]string{}
			for i := range 40 {
				m[fmt.Sprint("f", i)] = "x"
			}
			return m
		}(), 400, "invalid_form"},
	}
	odd, body := postTranscriptionAs(t, h, []byte{1, 2, 3}, "audio/L16; rate=16000", nil)
	if odd.StatusCode != 400 || !strings.Contains(string(body), "odd_length_pcm") {
		t.Errorf("odd-length raw PCM (audio/L16): %d %s", odd.StatusCode, body)
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			resp, body := postTranscription(t, h, tc.file, tc.fields)
			var e struct{ Error door.OpenAIError }
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("%s: not OpenAI's error shape: %v", body, err)
			}
			if resp.StatusCode != tc.status || e.Error.Code != tc.code || e.Error.Message == "" || e.Error.Type != "invalid_request_error" {
				t.Fatalf("%d %s, want %d %s", resp.StatusCode, body, tc.status, tc.code)
			}
		})
	}
}

// An upload is decoded and resampled a block at a time, and its windows are exactly those of the
// whole signal resampled at once (what the door sent before it streamed).
func TestUploadWindowsMatchWholeResample(t *testing.T) {
	pcm := make([]float32, 44100*65) // 65 s: three windows
	for i := range pcm {
		pcm[i] = float32(math.Sin(float64(i)*0.01)) * 0.5
	}
	for _, rate := range []int{16000, 8000, 44100} {
		in := pcm[:len(pcm)*rate/44100]
		file := wavBytes(in, rate, 1)
		want, _, err := audio.DecodeWAVBytes(file)
		if err != nil {
			t.Fatal(err)
		}
		if rate != 16000 {
			want = audio.Resample(want, rate, 16000)
		}
		src, refusal := openUpload(bytes.NewReader(file), int64(len(file)))
		if refusal != nil {
			t.Fatal(refusal)
		}
		windows := readWindows(t, src)
		if got := slices.Concat(windows...); len(windows) != 3 || !slices.Equal(got, want) {
			t.Fatalf("%d Hz: %d windows, %d samples, want 3 windows of the whole resampled (%d samples)", rate, len(windows), len(got), len(want))
		}
	}
}

func FuzzDecodeUpload(f *testing.F) {
	pcm := make([]float32, 160)
	f.Add(wavBytes(pcm, 16000, 1))
	f.Add(wavBytes(pcm, 44100, 2))
	f.Add([]byte("RIFF\x10\x00\x00\x00WAVEfmt "))
	f.Add([]byte{1, 2, 3, 4})
	f.Fuzz(func(t *testing.T, data []byte) {
		src, refusal := openUpload(bytes.NewReader(data), int64(len(data)))
		if refusal != nil {
			if refusal.Name() == "" || (refusal.Status() != 400 && refusal.Name() != "audio_too_long") {
				t.Fatalf("refusal %+v", refusal)
			}
			return
		}
		if len(readWindows(t, src)) == 0 {
			t.Fatal("no audio and no refusal")
		}
	})
}

// readWindows reads an upload's windows to the end; each must hold 1 to audio.WhisperSamples
// samples.
func readWindows(t testing.TB, src *uploadAudio) [][]float32 {
	t.Helper()
	var windows [][]float32
	for {
		w, err := src.next()
		if errors.Is(err, io.EOF) {
			return windows
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(w) == 0 || len(w) > audio.WhisperSamples {
			t.Fatalf("a window of %d samples", len(w))
		}
		windows = append(windows, w)
	}
}
