package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestApplyEnv(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		wantBind string
		wantMax  int
		wantErr  string
	}{
		{"defaults", nil, nil, "127.0.0.1:8200", 128, ""},
		{"variable applies", nil, map[string]string{"VOICED_BIND": "0.0.0.0:9000", "VOICED_MAX_SPEECH_SESSIONS": "4"}, "0.0.0.0:9000", 4, ""},
		{"flag wins", []string{"--bind", "127.0.0.1:1"}, map[string]string{"VOICED_BIND": "0.0.0.0:9000"}, "127.0.0.1:1", 128, ""},
		{"bad value names the variable", nil, map[string]string{"VOICED_MAX_SPEECH_SESSIONS": "lots"}, "", 0, "VOICED_MAX_SPEECH_SESSIONS"},
		{"unrelated variables ignored", nil, map[string]string{"VOICED_BIN": "/x", "VOICED_SHARED_DATA": "/y"}, "127.0.0.1:8200", 128, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			bind := fs.String("bind", "127.0.0.1:8200", "")
			max := fs.Int("max-speech-sessions", 128, "")
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			_, err := applyEnv(fs, func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if *bind != tc.wantBind || *max != tc.wantMax {
				t.Errorf("bind %q max %d, want %q %d", *bind, *max, tc.wantBind, tc.wantMax)
			}
		})
	}
}

func TestServiceTokenPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	os.WriteFile(file, []byte("\n  from-file \n"), 0o600)
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    string // "" means no token configured
		wantErr string
	}{
		{"none", nil, nil, "", ""},
		{"file flag, trimmed", []string{"--token-file", file}, nil, "from-file", ""},
		{"VOICED_TOKEN", nil, map[string]string{"VOICED_TOKEN": "from-env"}, "from-env", ""},
		{"file flag wins over VOICED_TOKEN", []string{"--token-file", file}, map[string]string{"VOICED_TOKEN": "from-env"}, "from-file", ""},
		{"VOICED_TOKEN wins over VOICED_TOKEN_FILE", nil, map[string]string{"VOICED_TOKEN": "from-env", "VOICED_TOKEN_FILE": file}, "from-env", ""},
		{"VOICED_TOKEN_FILE alone", nil, map[string]string{"VOICED_TOKEN_FILE": file}, "from-file", ""},
		{"unreadable file", []string{"--token-file", filepath.Join(dir, "absent")}, nil, "", "absent"},
		{"blank token", nil, map[string]string{"VOICED_TOKEN": " \t"}, "", "empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			defer func(old func(string) (string, bool)) { lookupEnv = old }(lookupEnv)
			lookupEnv = lookup
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			tokenFile := fs.String("token-file", "", "")
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			fromEnv, err := applyEnv(fs, lookup)
			if err != nil {
				t.Fatal(err)
			}
			app := &App{flagSet: fs, fromEnv: fromEnv}
			token, _, err := serviceToken(app, *tokenFile)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(token) != tc.want {
				t.Errorf("token %q, want %q", token, tc.want)
			}
		})
	}
}
