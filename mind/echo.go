package mind

import (
	"context"
	"strings"
)

var _ Mind = (*Echo)(nil)

// Echo answers with what it heard: "You said: <the last user message>." After a tool's output it
// says what the tool returned. It needs no server and makes no calls; it is the default mind.
type Echo struct{}

// Answer streams the echo word by word, so that the reply chunker sees a streamed answer.
func (Echo) Answer(ctx context.Context, req Request, emit func(Delta) error) (Reply, error) {
	text := echoText(req.History)
	var sent strings.Builder
	for _, word := range strings.SplitAfter(text, " ") {
		if err := ctx.Err(); err != nil {
			return Reply{Text: sent.String()}, err
		}
		if err := emit(Delta{Text: word}); err != nil {
			return Reply{Text: sent.String()}, err
		}
		sent.WriteString(word)
	}
	return Reply{Text: text}, nil
}

func echoText(history []Message) string {
	if n := len(history); n > 0 && history[n-1].Role == RoleTool {
		return "The tool returned: " + strings.TrimSpace(history[n-1].Text)
	}
	heard := strings.TrimSpace(LastUserText(history))
	if heard == "" {
		return "I heard nothing."
	}
	if !strings.ContainsAny(heard[len(heard)-1:], ".!?") {
		heard += "."
	}
	return "You said: " + heard
}
