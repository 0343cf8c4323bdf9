package mind

import (
	"context"
	"fmt"
	"strings"
)

var _ Mind = (*Echo)(nil)

// Echo answers with what it heard: "You said: <the last user message>." After a tool's output it
// says what the tool returned; of a message's images it says how many it was shown, of its audio
// how long it heard it (an omni request). It needs no
// server and makes no calls; it is the default mind. Its tokens are words: MaxOutputTokens cuts
// the echo after that many (Reply.Stop StopMaxTokens).
type Echo struct{}

// Answer streams the echo word by word, so that the reply chunker sees a streamed answer.
func (Echo) Answer(ctx context.Context, req Request, emit func(Delta) error) (Reply, error) {
	text := echoText(req.History)
	var sent strings.Builder
	for i, word := range strings.SplitAfter(text, " ") {
		if err := ctx.Err(); err != nil {
			return Reply{Text: sent.String()}, err
		}
		if req.MaxOutputTokens > 0 && i == req.MaxOutputTokens {
			return Reply{Text: sent.String(), Stop: StopMaxTokens}, nil
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
	shown := ""
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Role == RoleUser {
			switch n := history[i].Images(); n {
			case 0:
			case 1:
				shown = "You showed me an image."
			default:
				shown = fmt.Sprintf("You showed me %d images.", n)
			}
			if history[i].Audios() > 0 {
				shown = strings.TrimSpace(fmt.Sprintf("I heard %.1f seconds of your voice. %s", history[i].AudioSeconds(), shown))
			}
			break
		}
	}
	if heard == "" {
		if shown != "" {
			return shown
		}
		return "I heard nothing."
	}
	if !strings.ContainsAny(heard[len(heard)-1:], ".!?") {
		heard += "."
	}
	if shown != "" {
		return "You said: " + heard + " " + shown
	}
	return "You said: " + heard
}
