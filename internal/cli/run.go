package cli

import (
	"context"
	"flag"
	"fmt"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/study"
)

const runAbout = `
Runs the pressure-and-correction protocol: every case of the deck, crossed with
both identity assignments and both presentation orders, on every branch (no
follow-up, neutral follow-up, authority / emotional / consensus pressure, and a
verified correction through the evidence channel), repeated as the deck says.
Each branch is a fresh session. Prints "run: <id>", shows progress on stderr,
then prints the measures and the decision line.

Identity contrast: a deck shows each profile with an identity field whose two
values stand for the conditions X and Y. The built-in decks show placeholder
letters and name no reviewer, so a model sees no identity to react to: such a
run measures order and agreeableness only, and every report says so.
--identities 'LABEL_X,LABEL_Y' declares the synthetic contrast to test without
editing the deck: the model sees LABEL_X where the deck shows X and LABEL_Y
where it shows Y; --identity-reviewer names who approved the contrast for the
intended context; --identity-field renames the field. Reports
keep calling the conditions X and Y and print the labels beside them; the
contrast is recorded with the run (and in its fingerprint), so --resume and
--replay use it.

Models: sim (the built-in simulator, default), sim:PROFILE with a built-in
profile (default, fair, steadfast, stubborn, incurious, pushover, credulous) or
sim:path/to/profile.yaml; sim:oracle, handed the deck's answer key, answers
every case with the reference the deck declares (to run a deck end to end as
a correctly behaving model would; its reports say it is not a model);
openai:MODEL, anthropic:MODEL, openrouter:MODEL
(keys from OPENAI_API_KEY, ANTHROPIC_API_KEY, OPENROUTER_API_KEY);
ollama:MODEL (Ollama at $OLLAMA_HOST or 127.0.0.1:11434);
openai-compatible:MODEL with --base-url (vLLM, llama.cpp, LM Studio, budge sim
serve; key from OPENAI_COMPATIBLE_API_KEY if set); NAME:MODEL for an endpoint
named in the --config file.

Multi-turn pressure (optional): --turns K makes each pressure session send up to
K messages of its family, one after each answer, whether or not the model has
moved (the deck's wordings in order: a case's message, then its "again"
wordings, reused from the start when K exceeds them). The one-message measures read
turn 1, as in a one-turn run; the report adds, per family and direction, the
turn of the first flip, the flips across turns and the share still holding the
correct profile after each turn t = 1..K, censored at K. K is recorded with the
run, so --resume and --replay keep it.

--resume RUN continues an interrupted run (after Ctrl-C, a crash or kill -9)
without sending completed sessions again. --replay RUN re-runs a finished run's
sessions from its recorded responses, as a new run, with no network calls.`

const runExamples = `
  budge run
  budge run --model sim:stubborn --seed 7 --concurrency 32
  budge deck freeze confirmation && budge run --deck confirmation --format md
  budge run --lang zh                        # the built-in Chinese discovery deck
  budge run --deck docs/examples/tablet-loan.yaml --model sim:oracle --fail-on-block
  budge run --deck ./my-deck/                # the one deck file in the folder
  budge run --model openai:gpt-4o-mini --concurrency 16 --max-cost 2 --config budge.yaml
  budge run --model openai-compatible:sim --base-url http://127.0.0.1:8088/v1
  budge run --model ollama:llama3.2 --channel message
  budge run --identities 'woman,man' --identity-reviewer 'J. Rivera (DEI review, 2026-11)'
  budge run --lang zh --identities '女性,男性' --identity-field 性别 --identity-reviewer 王老师
  budge run --deck docs/examples/tablet-loan.yaml --model sim:oracle
  budge run --turns 3                        # up to 3 pressure messages per pressure session
  budge run --resume latest
  budge run --replay 20261202-150455-a1b2c3`

// pressureRun is budge run.
var pressureRun = runCommand{name: "run", about: runAbout, examples: runExamples, hint: "use --deck to choose a deck",
	model:    "model to test: " + endpoint.Names,
	tempHelp: "sampling temperature sent with every request (default: provider default, not sent)",
	fixed:    fixedByPressureRun,
}

func cmdRun(ctx context.Context, std IO, args []string) error {
	o := study.DefaultPressureOptions()
	rf := pressureRun.flags(std, &o.RunOptions)
	fs := rf.fs
	fs.StringVar(&o.Deck, "deck", o.Deck, "built-in deck name (budge deck list), a deck file, or a folder holding one deck file")
	fs.StringVar(&o.Language, "lang", "", "language of the run: en or zh picks that language's built-in discovery deck; with --deck, the deck must be written in it")
	fs.StringVar(&o.Channel, "channel", o.Channel, "evidence channel: auto, tool (the model reads a registry tool) or message (marked evidence messages)")
	fs.StringVar(&o.PromptFile, "prompt", "", "file with an application prompt that replaces the deck's (an intervention to test)")
	fs.IntVar(&o.Turns, "turns", 1, "pressure messages of its family a pressure session sends, one after each answer (1: one message, as the protocol is designed; K > 1 adds the multi-turn section: turn of first flip, flips, survival to K)")
	failOnBlock := fs.Bool("fail-on-block", false, "exit 4 when the decision rule says investigate")
	ids := contrastFlags(fs)
	if err := rf.parse(args); err != nil {
		return err
	}
	var err error
	if o.Contrast, err = ids.contrast(fs); err != nil {
		return err
	}
	if o.Language != "" && !flagSet(fs, "deck") {
		o.Deck = "" // the language's own deck, never a translation
	}
	res, err := rf.execute(ctx, std, func() study.Plan { return o })
	if err != nil {
		return err
	}
	if *failOnBlock && res != nil && res.Verdict().Investigate {
		return codedError{ExitBlocked, fmt.Errorf("decision: investigate (--fail-on-block)")}
	}
	return nil
}

// identityFlags declare a synthetic identity contrast over the deck's.
type identityFlags struct{ labels, reviewer, field *string }

func contrastFlags(fs *flag.FlagSet) identityFlags {
	return identityFlags{
		labels:   fs.String("identities", "", "the synthetic identity contrast to show, as 'LABEL_X,LABEL_Y' (replaces the deck's identity values; the report keeps calling them X and Y)"),
		reviewer: fs.String("identity-reviewer", "", "with --identities: who reviewed the contrast for the intended context (without it the deck's reviewer stands)"),
		field:    fs.String("identity-field", "", "with --identities: the name of the identity field shown in each profile (default: the deck's identity.label)"),
	}
}

// contrast is the declared contrast, or nil when --identities is not given.
func (f identityFlags) contrast(fs *flag.FlagSet) (*pressure.Contrast, error) {
	if *f.labels == "" {
		for _, name := range []string{"identity-reviewer", "identity-field"} {
			if flagSet(fs, name) {
				return nil, usageError{"--" + name + " goes with --identities 'LABEL_X,LABEL_Y'"}
			}
		}
		return nil, nil
	}
	x, y, err := pressure.ParseIdentities(*f.labels)
	if err != nil {
		return nil, usageError{err.Error()}
	}
	return &pressure.Contrast{X: x, Y: y, Reviewer: *f.reviewer, Field: *f.field}, nil
}
