// Package framing is the DialDefer protocol: it asks a model whether an
// answer to a question is correct, once as a bare statement (C1, "is this
// statement correct?") and once attributed to a speaker in a short dialogue
// (C2, "is Speaker 2 correct?"), with the question and answer text
// byte-identical between the two, and measures how the framing moves the
// model's judgment: accuracy per condition, ΔCorrect, ΔIncorrect and the
// Dialogic Deference Score (DDS = ΔCorrect − ΔIncorrect).
//
// It holds the items, the four conditions, the prompt templates, speaker
// label sets, mitigations, the optional multi-turn challenge, naturalistic
// dialogues with judger and judgee roles, the per-session conversation the
// runner drives, the answer parser, scoring and the measures.
//
// It never imports a provider and does no I/O beyond reading template
// files it is pointed at: a finished run is re-scored from what the store
// holds.
package framing
