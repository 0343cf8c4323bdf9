package speechdoor

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"testing"

	"github.com/voiced/voiced/speechcore/fixture"
)

// postTranslation posts file (a WAV) and fields to POST /v1/audio/translations.
func postTranslation(t *testing.T, h *hearingServer, file []byte, fields map[string]string) (int, []byte) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for k, v := range fields {
		mw.WriteField(k, v)
	}
	fw, _ := mw.CreateFormFile("file", "speech.wav")
	fw.Write(file)
	mw.Close()
	resp, err := http.Post(h.srv.URL+"/v1/audio/translations", mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// TestTranslations (issue 21): POST /v1/audio/translations, OpenAI's route, decodes with
// Whisper's <|translate|> task after detecting the spoken language: the fixture's Spanish speech
// comes back as the fixture's defined translation (fixture.TranslateIDs), never as its Spanish
// transcript, in json, text and verbose_json (task translate, language english: the output's, as openai-node's TranslationVerbose documents);
// English speech comes back as itself.
func TestTranslations(t *testing.T) {
	h := newHearingServer(t, Config{})
	es, esText := codecSpeech(t, spanishSpeech)
	want := fixture.Phonemes(fixture.TranslateIDs(fixture.PhonemeIDs(spanishSpeech)))
	wav := wavBytes(es, 16000, 1)
	code, out := postTranslation(t, h, wav, map[string]string{"model": "whisper-1"})
	var j struct{ Text string }
	if code != 200 || json.Unmarshal(out, &j) != nil || j.Text != want || j.Text == esText {
		t.Fatalf("json: %d %s, want %q", code, out, want)
	}
	code, out = postTranslation(t, h, wav, map[string]string{"model": "whisper-1", "response_format": "text", "prompt": "", "temperature": "0"})
	if code != 200 || string(out) != want+"\n" {
		t.Fatalf("text: %d %q", code, out)
	}
	code, out = postTranslation(t, h, wav, map[string]string{"model": "whisper-1", "response_format": "verbose_json"})
	var v verboseTranscription
	if code != 200 || json.Unmarshal(out, &v) != nil || v.Task != "translate" || v.Language != "english" || v.Text != want || len(v.Segments) != 1 {
		t.Fatalf("verbose_json: %d %s", code, out)
	}
	en, enText := codecSpeech(t, sttSentence)
	code, out = postTranslation(t, h, wavBytes(en, 16000, 1), map[string]string{"model": "whisper-1"})
	if code != 200 || json.Unmarshal(out, &j) != nil || j.Text != enText {
		t.Fatalf("English: %d %s, want %q", code, out, enText)
	}
}
