package whisper

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyModel copies the fixture whisper directory to a temporary one and lets edit change it.
func copyModel(t *testing.T, edit func(dir string)) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(whisperDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(whisperDir(), e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit(dir)
	return dir
}

func rewrite(t *testing.T, path, old, new string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s has no %q", path, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadRefusesByName(t *testing.T) {
	cases := []struct {
		name string
		edit func(t *testing.T, dir string)
		want error
	}{
		{"no tokenizer", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, FileTokenizer)) }, ErrConfig},
		{"no generation config", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, FileGenerationConfig)) }, ErrConfig},
		{"broken config", func(t *testing.T, dir string) { os.WriteFile(filepath.Join(dir, FileConfig), []byte("{"), 0o644) }, ErrConfig},
		{"mel bins disagree with the encoder", func(t *testing.T, dir string) {
			rewrite(t, filepath.Join(dir, FileConfig), `"num_mel_bins": 80`, `"num_mel_bins": 128`)
		}, ErrConfig},
		{"layers disagree with the decoder", func(t *testing.T, dir string) {
			rewrite(t, filepath.Join(dir, FileConfig), `"decoder_layers": 2`, `"decoder_layers": 3`)
		}, ErrConfig},
		{"heads disagree with the decoder", func(t *testing.T, dir string) {
			rewrite(t, filepath.Join(dir, FileConfig), `"decoder_attention_heads": 2`, `"decoder_attention_heads": 4`)
		}, ErrConfig},
		{"no end-of-text token", func(t *testing.T, dir string) {
			rewrite(t, filepath.Join(dir, FileTokenizer), `endoftext`, `eot`)
		}, ErrConfig},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyModel(t, func(dir string) { c.edit(t, dir) })
			e, err := Load(context.Background(), testEnv, dir, Options{SkipWarmup: true})
			if err == nil {
				e.Close()
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("Load = %v, want %v", err, c.want)
			}
		})
	}
}

// TestCancelWhileQueued: a request waiting behind another gives up when its context ends.
func TestCancelWhileQueued(t *testing.T) {
	e := loadEngine(t, Options{QueueDepth: 1, SkipWarmup: true})
	pcm := make([]float32, 16000)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	results := make(chan error, 3)
	for i := 0; i < 3; i++ {
		go func() {
			_, err := e.Transcribe(ctx, pcm)
			results <- err
		}()
	}
	for i := 0; i < 3; i++ {
		if err := <-results; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled request: %v", err)
		}
	}
	if _, err := e.Transcribe(context.Background(), pcm); err != nil {
		t.Fatalf("the engine serves after cancelled requests: %v", err)
	}
}
