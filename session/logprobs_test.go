package session

import (
	"testing"

	"github.com/voiced/voiced/wire"
)

func TestTokensFrom(t *testing.T) {
	lps := []wire.Logprob{{Token: " Hello", Bytes: []byte(" Hello"), Logprob: -0.1}, {Token: " wor", Bytes: []byte(" wor"), Logprob: -0.2},
		{Token: "ld", Bytes: []byte("ld"), Logprob: -0.3}}
	for name, tc := range map[string]struct {
		text string
		from int
		want bool
		n    int // tokens, -1: nil
	}{
		"not included":       {" Hello world", 0, false, -1},
		"all":                {" Hello world", 0, true, 3},
		"after the first":    {" Hello world", 6, true, 2},
		"mid token":          {" Hello world", 8, true, 2},
		"last":               {" Hello world", 10, true, 1},
		"bytes do not match": {"Hello world", 0, true, 0},
	} {
		t.Run(name, func(t *testing.T) {
			got := tokensFrom(lps, tc.text, tc.from, tc.want)
			if tc.n < 0 {
				if got != nil {
					t.Fatalf("got %v, want nil", got)
				}
				return
			}
			if got == nil || len(got) != tc.n || (tc.n > 0 && got[len(got)-1].Token != "ld") {
				t.Fatalf("got %+v, want the last %d", got, tc.n)
			}
		})
	}
}
