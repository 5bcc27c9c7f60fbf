package framing

// ImportCheck records what `budge framing import` verified about a
// released result set before scoring it with budge's own parser.
type ImportCheck struct {
	Source  string `json:"source"`
	Files   int    `json:"files"`
	Records int    `json:"records"`
	Answers int    `json:"answers"`
	// PromptsChecked prompts were compared byte for byte with budge's
	// rendering under the given templates; PromptsIdentical of them matched.
	PromptsChecked   int      `json:"prompts_checked"`
	PromptsIdentical int      `json:"prompts_identical"`
	PromptMismatches []string `json:"prompt_mismatches,omitempty"`
	// RepliesParsed replies were read with budge's parser; ParserAgrees of
	// them gave the answer the release recorded.
	RepliesParsed    int      `json:"replies_parsed"`
	ParserAgrees     int      `json:"parser_agrees"`
	ParserDisagrees  []string `json:"parser_disagreements,omitempty"`
	RecordedOnly     int      `json:"recorded_answers_without_transcript"`
	RecordedOnlyNote string   `json:"recorded_answers_note,omitempty"`
}
