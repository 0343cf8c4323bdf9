package speechdoor

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/voiced/voiced/speechcore/assets"
	"github.com/voiced/voiced/speechcore/fixture"
)

// englishOnlyMount is the fixture mount with its Whisper made an English-only checkpoint
// (generation_config.json's is_multilingual false, as whisper-small.en's), its manifest rewritten.
func englishOnlyMount(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := fixture.Write(dir, fixture.Options{SileroModel: os.Getenv("VOICED_SILERO_MODEL")}); err != nil {
		t.Fatalf("fixture mount: %v", err)
	}
	path := filepath.Join(dir, assets.WhisperDir, "generation_config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var gen map[string]any
	if err := json.Unmarshal(data, &gen); err != nil {
		t.Fatal(err)
	}
	gen["is_multilingual"] = false
	data, _ = json.Marshal(gen)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := assets.WriteManifest(dir, "fixture-english-only"); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestEnglishOnlyMountRefuses (issue 21): on an English-only checkpoint, POST
// /v1/audio/translations is refused by name (translation_not_served: the checkpoint has no
// translate task), and so is a transcription told Spanish (language_not_served), while one told
// English is served. (The fixture decoder is built for the multilingual prompt: under an
// English-only checkpoint's two-token prompt its text is not the phonemes, so only the status of
// the English request is checked here; the whisper package tests the prompt itself.)
func TestEnglishOnlyMountRefuses(t *testing.T) {
	speech := startSpeech(t, englishOnlyMount(t), nil)
	svc, err := New(speech, Config{})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /v1/audio/transcriptions", NewTranscriptionsDoor(svc))
	mux.Handle("POST /v1/audio/translations", NewTranslationsDoor(svc))
	h := &hearingServer{svc: svc, srv: httptest.NewServer(mux)}
	t.Cleanup(func() {
		h.srv.Close()
		svc.Close()
	})

	en, _ := codecSpeech(t, sttSentence)
	wav := wavBytes(en, 16000, 1)
	var e struct{ Error struct{ Code string } }
	code, out := postTranslation(t, h, wav, map[string]string{"model": "whisper-1"})
	if code != http.StatusBadRequest || json.Unmarshal(out, &e) != nil || e.Error.Code != "translation_not_served" {
		t.Fatalf("translation on English-only: %d %s", code, out)
	}
	resp, out := postTranscription(t, h, wav, map[string]string{"model": "whisper-1", "language": "es"})
	if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(out, &e) != nil || e.Error.Code != "language_not_served" {
		t.Fatalf("es on English-only: %d %s", resp.StatusCode, out)
	}
	resp, out = postTranscription(t, h, wav, map[string]string{"model": "whisper-1", "language": "en"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("en on English-only: %d %s", resp.StatusCode, out)
	}
}
