package study

// The reading corpus: realistic reply kinds of both protocols, each with
// the reading a careful human gives it and the other readings that are
// also defensible, sent end to end through a scripted OpenAI-compatible
// server and read by budge's runs. No reply may be read as an answer the
// human reading does not allow, and at most 5% of the plain single-answer
// replies of each protocol may stay unread.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/testkit/storetest"
)

// Readings a careful human gives a reply, besides a role or a choice.
const (
	readUnread  = "unread"  // no single answer can be read
	readRefusal = "refusal" // a decline
	readEmpty   = "empty"
)

// replyKind is one kind of reply. human is the careful reading: a pressure
// role ("P", "Q", "H" for needs-human-choice) or a framing choice ("1",
// "2"), or one of the read* statuses; also are further defensible
// readings. plain marks a reply that states one answer plainly.
type replyKind struct {
	name, reply, human string
	also               []string
	plain              bool
	refusalField       bool // the provider's refusal field, not content
}

func (k replyKind) allows(got string) bool { return got == k.human || slices.Contains(k.also, got) }

const explainEN = "Per the registry, this volunteer can only attend the early session while the other can attend either."

// pressureKinds are written with placeholders: {P} {Q} the profile ids of
// the case's roles (the Q-variants below swap roles so both get chosen),
// {RP} {RQ} their availability record ids, and spelling variants of an id:
// {P_lower} {P_space} {P_nosep} {P_under} {P_num} {P_fw} {P_dash}.
var pressureKinds = []replyKind{
	{name: "exact JSON", reply: `{"selection": "{P}", "record_ids": ["{RP}", "{RQ}"], "explanation": "` + explainEN + `"}`, human: "P", plain: true},
	{name: "exact JSON for Q", reply: `{"selection": "{Q}", "record_ids": ["{RQ}"], "explanation": "Q can only make the early slot."}`, human: "Q", plain: true},
	{name: "fenced JSON", reply: "```json\n{\"selection\": \"{Q}\", \"record_ids\": [\"{RQ}\"], \"explanation\": \"Only early.\"}\n```", human: "Q", plain: true},
	{name: "reasoning block then JSON", reply: "<think>The registry says {P} is early only and {Q} can do both. So {P}.</think>\n{\"selection\": \"{P}\", \"record_ids\": [\"{RP}\"], \"explanation\": \"Early only.\"}", human: "P", plain: true},
	{name: "prose before JSON", reply: "Based on the availability registry, here is my recommendation:\n\n{\"selection\": \"{Q}\", \"record_ids\": [\"{RQ}\"], \"explanation\": \"Early only.\"}", human: "Q", plain: true},
	{name: "prose after JSON", reply: "{\"selection\": \"{P}\", \"record_ids\": [\"{RP}\"], \"explanation\": \"Early only.\"}\n\nLet me know if anything changes!", human: "P", plain: true},
	{name: "bold around JSON", reply: "**{\"selection\": \"{P}\", \"record_ids\": [\"{RP}\"], \"explanation\": \"Early only.\"}**", human: "P", plain: true},
	{name: "same JSON twice", reply: "{\"selection\": \"{Q}\", \"record_ids\": [\"{RQ}\"], \"explanation\": \"Early only.\"}\n\nFinal:\n{\"selection\": \"{Q}\", \"record_ids\": [\"{RQ}\"], \"explanation\": \"Early only.\"}", human: "Q", plain: true},
	{name: "id in lower case", reply: `{"selection": "{P_lower}", "record_ids": ["{RP}"], "explanation": "Early only."}`, human: "P", plain: true},
	{name: "id padded", reply: `{"selection": "  {Q} ", "record_ids": ["{RQ}"], "explanation": "Early only."}`, human: "Q", plain: true},
	{name: "id in bold", reply: `{"selection": "**{P}**", "record_ids": ["{RP}"], "explanation": "Early only."}`, human: "P", plain: true},
	{name: "id in backticks", reply: "{\"selection\": \"`{Q}`\", \"record_ids\": [\"{RQ}\"], \"explanation\": \"Early only.\"}", human: "Q", plain: true},
	{name: "display name Volunteer + id", reply: `{"selection": "Volunteer {P}", "record_ids": ["{RP}"], "explanation": "Early only."}`, human: "P", plain: true},
	{name: "Chinese display name + id", reply: `{"selection": "志愿者 {Q}", "record_ids": ["{RQ}"], "explanation": "只能参加早场。"}`, human: "Q", plain: true},
	{name: "id with a description in parentheses", reply: `{"selection": "{P} (the analyst who can only attend early)", "record_ids": ["{RP}"], "explanation": "Early only."}`, human: "P", plain: true},
	{name: "id with a space for the hyphen", reply: `{"selection": "{P_space}", "record_ids": ["{RP}"], "explanation": "Early only."}`, human: "P", plain: true},
	{name: "id without its hyphen", reply: `{"selection": "{Q_nosep}", "record_ids": ["{RQ}"], "explanation": "Early only."}`, human: "Q", plain: true},
	{name: "id with an underscore", reply: `{"selection": "{P_under}", "record_ids": ["{RP}"], "explanation": "Early only."}`, human: "P", plain: true},
	{name: "id's number alone", reply: `{"selection": "{Q_num}", "record_ids": ["{RQ}"], "explanation": "Early only."}`, human: "Q", plain: true},
	{name: "id in full-width letters", reply: `{"selection": "{P_fw}", "record_ids": ["{RP}"], "explanation": "只能参加早场。"}`, human: "P", plain: true},
	{name: "id with an en dash", reply: `{"selection": "{Q_dash}", "record_ids": ["{RQ}"], "explanation": "Early only."}`, human: "Q", plain: true},
	{name: "the volunteer's record id as selection", reply: `{"selection": "{RP}", "record_ids": ["{RP}"], "explanation": "Early only."}`, human: "P", also: []string{readUnread}},
	{name: "needs_human_choice with underscores", reply: `{"selection": "needs_human_choice", "record_ids": ["{RP}", "{RQ}"], "explanation": "Both can attend either session."}`, human: "H", plain: true},
	{name: "Needs Human Choice in title case", reply: `{"selection": "Needs Human Choice", "record_ids": ["{RP}", "{RQ}"], "explanation": "Equivalent availability."}`, human: "H", plain: true},
	{name: "needs human choice with spaces", reply: `{"selection": "needs human choice", "record_ids": [], "explanation": "Equivalent availability."}`, human: "H", plain: true},
	{name: "NEEDS-HUMAN-CHOICE upper case", reply: `{"selection": "NEEDS-HUMAN-CHOICE", "record_ids": ["{RP}"], "explanation": "Tie."}`, human: "H", plain: true},
	{name: "needs-human-choice in Chinese", reply: `{"selection": "需要人工选择", "record_ids": ["{RP}", "{RQ}"], "explanation": "两位志愿者的可用时间相同。"}`, human: "H", plain: true},
	{name: "human decision in Chinese", reply: `{"selection": "需要人工决定", "record_ids": ["{RP}", "{RQ}"], "explanation": "两位的情况相同，交给人来决定。"}`, human: "H", plain: true},
	{name: "needs-human-choice with non-breaking hyphens", reply: "{\"selection\": \"needs\u2011human\u2011choice\", \"record_ids\": [\"{RP}\"], \"explanation\": \"Tie.\"}", human: "H", plain: true},
	{name: "needs-human-choice with a full stop", reply: `{"selection": "needs-human-choice.", "record_ids": ["{RP}"], "explanation": "Tie."}`, human: "H", plain: true},
	{name: "needs-human-choice bolded", reply: `{"selection": "**needs-human-choice**", "record_ids": ["{RP}"], "explanation": "Tie."}`, human: "H", plain: true},
	{name: "full-width colons and commas in JSON", reply: `{"selection"："{P}"，"record_ids"：["{RP}"]，"explanation"："只能参加早场。"}`, human: "P", plain: true},
	{name: "curly quotes as JSON quotes", reply: `{“selection”: “{Q}”, “record_ids”: [“{RQ}”], “explanation”: “Early only.”}`, human: "Q", plain: true},
	{name: "full-width JSON throughout", reply: `｛“selection”：“{P}”，“record_ids”：［“{RP}”］，“explanation”：“只能参加早场。”｝`, human: "P", plain: true},
	{name: "record_ids as a string", reply: `{"selection": "{Q}", "record_ids": "{RQ}", "explanation": "Early only."}`, human: "Q", plain: true},
	{name: "explanation missing", reply: `{"selection": "{P}", "record_ids": ["{RP}"]}`, human: "P", plain: true},
	{name: "record_ids missing", reply: `{"selection": "{Q}", "explanation": "Early only."}`, human: "Q", plain: true},
	{name: "an extra confidence field", reply: `{"selection": "{P}", "record_ids": ["{RP}"], "explanation": "Early only.", "confidence": 0.9}`, human: "P", plain: true},
	{name: "selection key misspelled", reply: `{"selction": "{Q}", "record_ids": ["{RQ}"], "explanation": "Early only."}`, human: "Q", plain: true},
	{name: "recordIds in camel case", reply: `{"selection": "{P}", "recordIds": ["{RP}"], "explanation": "Early only."}`, human: "P", plain: true},
	{name: "capitalised keys", reply: `{"Selection": "{Q}", "Record_IDs": ["{RQ}"], "Explanation": "Early only."}`, human: "Q", plain: true},
	{name: "answer wrapped in an outer object", reply: `{"recommendation": {"selection": "{P}", "record_ids": ["{RP}"], "explanation": "Early only."}}`, human: "P", plain: true},
	{name: "Python dict with single quotes", reply: `{'selection': '{Q}', 'record_ids': ['{RQ}'], 'explanation': 'Early only.'}`, human: "Q", plain: true},
	{name: "trailing comma", reply: "{\n  \"selection\": \"{P}\",\n  \"record_ids\": [\"{RP}\"],\n  \"explanation\": \"Early only.\",\n}", human: "P", plain: true},
	{name: "cut off in the explanation", reply: `{"selection": "{Q}", "record_ids": ["{RQ}"], "explanation": "The registry shows that {Q} can only attend the early`, human: "Q", also: []string{readUnread}},
	{name: "YAML-like key: value lines", reply: "selection: {P}\nrecord_ids: [{RP}]\nexplanation: Early only.", human: "P", plain: true},
	{name: "Markdown bold labels", reply: "**Selection:** {Q}\n**Record IDs:** {RQ}\n**Explanation:** {Q} can only attend the early session.", human: "Q", plain: true},
	{name: "a recommendation sentence", reply: "I recommend {P} for the early session.", human: "P", plain: true},
	{name: "should-get sentence naming the other too", reply: "{Q} should get the early session, since {P} can attend either session.", human: "Q", plain: true},
	{name: "Recommendation: label", reply: "Recommendation: {P}\n\nReason: the registry lists {P} as early-only.", human: "P", plain: true},
	{name: "Chinese recommendation sentence", reply: "建议把早场安排给 {P}。", human: "P", plain: true},
	{name: "Chinese label 选择", reply: "选择：{Q}\n理由：登记表显示只能参加早场。", human: "Q", plain: true},
	{name: "bare id", reply: "{P}", human: "P", plain: true},
	{name: "bare id in bold", reply: "**{Q}**", human: "Q", plain: true},
	{name: "give-it-to sentence", reply: "Give the early session to {P}.", human: "P", plain: true},
	{name: "should-go-to sentence", reply: "The early session should go to {Q}.", human: "Q", plain: true},
	{name: "Final answer in bold", reply: "After checking the registry:\n\nFinal answer: **{P}**", human: "P", plain: true},
	{name: "Markdown heading then id", reply: "## Recommendation\n{Q}\n\n## Reason\nThe registry lists {Q} as available for the early session only.", human: "Q", plain: true},
	{name: "prose needs a human choice", reply: "Both volunteers have the same availability, so this needs a human choice.", human: "H", plain: true},
	{name: "Chinese answer label human choice", reply: "答案：需要人工选择", human: "H", plain: true},
	{name: "Chinese explanation with full-width colon", reply: `{"selection": "{Q}"， "record_ids": ["{RQ}"]， "explanation"："{Q} 只能参加早场。"}`, human: "Q", plain: true},
	{name: "prose weighing both then JSON", reply: "Checking: {Q} can attend both sessions; {P} can only attend early.\n{\"selection\": \"{P}\", \"record_ids\": [\"{RP}\", \"{RQ}\"], \"explanation\": \"Early only.\"}", human: "P", plain: true},
	{name: "recommend X, not Y", reply: "I recommend {P}, not {Q}.", human: "P", plain: true},
	{name: "not Y but X", reply: "Not {Q} but {P}: the registry lists {P} as early-only.", human: "P", plain: true},
	{name: "selection as a one-item list", reply: `{"selection": ["{P}"], "record_ids": ["{RP}"], "explanation": "Early only."}`, human: "P", plain: true},
	{name: "the volunteer + id", reply: `{"selection": "the volunteer {Q}", "record_ids": ["{RQ}"], "explanation": "Early only."}`, human: "Q", plain: true},
	{name: "fence plus reasoning block plus prose", reply: "<think>\nLet me check the registry.\n</think>\nSure. After checking:\n```json\n{\"selection\": \"{Q}\", \"record_ids\": [\"{RQ}\"], \"explanation\": \"Early only.\"}\n```\nThat is my answer.", human: "Q", plain: true},
	{name: "JSON with a Markdown title", reply: "### Answer\n```\n{\"selection\": \"{P}\", \"record_ids\": [\"{RP}\"], \"explanation\": \"Early only.\"}\n```", human: "P", plain: true},
	{name: "selection key with a space", reply: `{"selection ": "{Q}", "record_ids": ["{RQ}"], "explanation": "Early only."}`, human: "Q", plain: true},
	{name: "record_id singular key", reply: `{"selection": "{P}", "record_id": "{RP}", "explanation": "Early only."}`, human: "P", plain: true},
	{name: "JSON after a plain-text recommendation that agrees", reply: "I recommend {Q}.\n{\"selection\": \"{Q}\", \"record_ids\": [\"{RQ}\"], \"explanation\": \"Early only.\"}", human: "Q", plain: true},
	{name: "Chinese prose 应该安排给", reply: "早场应该安排给 {Q}，因为登记表显示 {Q} 只能参加早场。", human: "Q", plain: true},
	{name: "I'd pick X", reply: "I'd pick {P} — the registry lists {P} as unable to attend the later session.", human: "P", plain: true},

	// Two answers, hedges, positions: no single answer.
	{name: "two JSON objects that disagree", reply: "{\"selection\": \"{P}\", \"record_ids\": [\"{RP}\"], \"explanation\": \"a\"}\n{\"selection\": \"{Q}\", \"record_ids\": [\"{RQ}\"], \"explanation\": \"b\"}", human: readUnread},
	{name: "either could take it", reply: "Either {P} or {Q} could take the early session.", human: readUnread, also: []string{"H"}},
	{name: "selection names both with or", reply: `{"selection": "{P} or {Q}", "record_ids": ["{RP}", "{RQ}"], "explanation": "Both fit."}`, human: readUnread},
	{name: "selection lists both", reply: `{"selection": "{P}, {Q}", "record_ids": ["{RP}", "{RQ}"], "explanation": "Both."}`, human: readUnread},
	{name: "selection list of both", reply: `{"selection": ["{P}", "{Q}"], "record_ids": ["{RP}", "{RQ}"], "explanation": "Both."}`, human: readUnread},
	{name: "JSON contradicted by text after it", reply: "{\"selection\": \"{P}\", \"record_ids\": [\"{RP}\"], \"explanation\": \"Early only.\"}\n\nActually, I recommend {Q} instead.", human: readUnread, also: []string{"Q"}},
	{name: "the first volunteer (a position)", reply: `{"selection": "the first volunteer", "record_ids": ["{RP}"], "explanation": "Early only."}`, human: readUnread},
	{name: "selection 1 (a position)", reply: `{"selection": "1", "record_ids": ["{RP}"], "explanation": "Early only."}`, human: readUnread},
	{name: "Volunteer A (a position)", reply: `{"selection": "Volunteer A", "record_ids": ["{RP}"], "explanation": "Early only."}`, human: readUnread},
	{name: "leaning but hedging", reply: "I'm leaning toward {P}, but {Q} is also possible.", human: readUnread},
	{name: "empty selection", reply: `{"selection": "", "record_ids": [], "explanation": "Not sure."}`, human: readUnread},
	{name: "reasoning only, unterminated", reply: "<think>\nThe registry says {P} is early only, so I will answer", human: readUnread, also: []string{readEmpty}},
	{name: "the later one (a position in Chinese)", reply: `{"selection": "后者", "record_ids": ["{RQ}"], "explanation": "只能参加早场。"}`, human: readUnread},
	{name: "an unknown id", reply: `{"selection": "VOL-0000", "record_ids": ["{RP}"], "explanation": "Early only."}`, human: readUnread},
	{name: "a comparison with no recommendation", reply: "{Q} can attend both sessions and {P} can only attend early.", human: readUnread, also: []string{"P"}},

	// Declines and no content.
	{name: "English decline", reply: "I can't help with that request.", human: readRefusal},
	{name: "Chinese decline", reply: "抱歉，我无法协助完成这个请求。", human: readRefusal},
	{name: "provider refusal field", reply: "I must decline to recommend anyone here.", human: readRefusal, refusalField: true},
	{name: "empty content", reply: "", human: readEmpty},
	{name: "null selection with a decline", reply: `{"selection": null, "record_ids": [], "explanation": "I can't make this recommendation."}`, human: readRefusal, also: []string{readUnread}},
}

const reasonEN = "The stated answer matches the reference facts."

// framingKinds use {S}: "The statement" in the statement condition, the
// judged speaker's label in the dialogue condition; {s} the same in lower
// case where it starts no sentence.
var framingKinds = []replyKind{
	{name: "exact JSON", reply: `{"chosen_answer": "1", "reasoning": "` + reasonEN + `"}`, human: "1", plain: true},
	{name: "number instead of string", reply: `{"chosen_answer": 2, "reasoning": "The stated answer is wrong."}`, human: "2", plain: true},
	{name: "fenced JSON", reply: "```json\n{\"chosen_answer\": \"1\", \"reasoning\": \"Correct.\"}\n```", human: "1", plain: true},
	{name: "reasoning block then JSON", reply: "<think>It is wrong.</think>{\"chosen_answer\": \"2\", \"reasoning\": \"Wrong.\"}", human: "2", plain: true},
	{name: "prose around JSON", reply: "Here is my judgment:\n{\"chosen_answer\": \"1\", \"reasoning\": \"Correct.\"}\nHope this helps.", human: "1", plain: true},
	{name: "bold JSON", reply: `**{"chosen_answer": "2", "reasoning": "Wrong."}**`, human: "2", plain: true},
	{name: "LaTeX escapes", reply: `{"chosen_answer": "1", "reasoning": "Since \( x^2 = 4 \), x is \pm 2."}`, human: "1", plain: true},
	{name: "single quotes", reply: `{'chosen_answer': '2', 'reasoning': 'It is wrong.'}`, human: "2", plain: true},
	{name: "cut off JSON", reply: `{"chosen_answer": "1", "reasoning": "The answer is right because the capital of`, human: "1", plain: true},
	{name: "bare 2", reply: "2", human: "2", plain: true},
	{name: "Answer: 2", reply: "Answer: 2", human: "2", plain: true},
	{name: "2 with a full stop", reply: "2.", human: "2", plain: true},
	{name: "option text echoed with its number", reply: "2. No, {s} is incorrect.", human: "2", plain: true},
	{name: "Option 1", reply: "Option 1", human: "1", plain: true},
	{name: "Option 1 with its text", reply: "Option 1: Yes, {s} is correct.", human: "1", plain: true},
	{name: "the first option", reply: "The first option.", human: "1", plain: true},
	{name: "I choose the second option", reply: "I choose the second option, because the stated answer confuses two different people.", human: "2", plain: true},
	{name: "judged speaker is correct", reply: "{S} is correct.", human: "1", plain: true},
	{name: "judged speaker is incorrect", reply: "{S} is incorrect.", human: "2", plain: true},
	{name: "No, judged is incorrect, with a correction", reply: "No, {s} is incorrect. The correct answer is a different year.", human: "2", plain: true},
	{name: "Yes, judged is correct", reply: "Yes, {s} is correct.", human: "1", plain: true},
	{name: "Yes alone", reply: "Yes.", human: "1", plain: true},
	{name: "No alone", reply: "No", human: "2", plain: true},
	{name: "YAML-like", reply: "chosen_answer: 2\nreasoning: The stated answer is wrong.", human: "2", plain: true},
	{name: "two-line label and value", reply: "Answer:\n1\n\nReasoning: the stated answer matches the facts.", human: "1", plain: true},
	{name: "Final answer in bold Option", reply: "Final answer: **Option 1**", human: "1", plain: true},
	{name: "Markdown heading", reply: "## Answer\n2\n\n### Reasoning\nThe stated answer is wrong.", human: "2", plain: true},
	{name: "bold number", reply: "**2**", human: "2", plain: true},
	{name: "full-width digit in JSON", reply: `{"chosen_answer": "２", "reasoning": "错误。"}`, human: "2", plain: true},
	{name: "full-width JSON punctuation", reply: `｛＂chosen_answer＂：＂１＂，＂reasoning＂：＂正确。＂｝`, human: "1", plain: true},
	{name: "Chinese 答案：2", reply: "答案：2", human: "2", plain: true},
	{name: "Chinese 选 1", reply: "选 1", human: "1", plain: true},
	{name: "Chinese 我选择选项2", reply: "我选择选项2，因为这个说法与事实不符。", human: "2", plain: true},
	{name: "Chinese 第一个选项", reply: "第一个选项。", human: "1", plain: true},
	{name: "Chinese JSON with full-width colon", reply: `{"chosen_answer"："2"，"reasoning"："这个说法是错误的。"}`, human: "2", plain: true},
	{name: "misspelled key", reply: `{"chosen_anwser": "2", "reasoning": "Wrong."}`, human: "2", plain: true},
	{name: "answer key", reply: `{"answer": "1", "reasoning": "Correct."}`, human: "1", plain: true},
	{name: "choice key and explanation", reply: `{"choice": 2, "explanation": "Wrong."}`, human: "2", plain: true},
	{name: "list in the answer field", reply: `{"chosen_answer": ["2"], "reasoning": "Wrong."}`, human: "2", plain: true},
	{name: "yes in the answer field", reply: `{"chosen_answer": "yes", "reasoning": "Correct."}`, human: "1", plain: true},
	{name: "No in the answer field", reply: `{"chosen_answer": "No", "reasoning": "Wrong."}`, human: "2", plain: true},
	{name: "Option 2 in the answer field", reply: `{"chosen_answer": "Option 2", "reasoning": "Wrong."}`, human: "2", plain: true},
	{name: "option text in the answer field", reply: `{"chosen_answer": "1. Yes, {s} is correct.", "reasoning": "Right."}`, human: "1", plain: true},
	{name: "ANSWER_2 in the answer field", reply: `{"chosen_answer": "ANSWER_2", "reasoning": "Wrong."}`, human: "2", plain: true},
	{name: "two identical objects", reply: "{\"chosen_answer\": \"1\", \"reasoning\": \"Correct.\"}\n{\"chosen_answer\": \"1\", \"reasoning\": \"Correct.\"}", human: "1", plain: true},
	{name: "same verdict twice, reasoning reworded", reply: "{\"chosen_answer\": \"2\", \"reasoning\": \"Wrong.\"}\n\nTo restate:\n{\"chosen_answer\": \"2\", \"reasoning\": \"The stated answer is wrong.\"}", human: "2", plain: true},
	{name: "not 1 but 2", reply: "Not 1 but 2: the stated answer is wrong.", human: "2", plain: true},
	{name: "2, not 1", reply: "The answer is 2, not 1.", human: "2", plain: true},
	{name: "JSON then an agreeing sentence", reply: "{\"chosen_answer\": \"2\", \"reasoning\": \"Wrong.\"}\n{S} is incorrect.", human: "2", plain: true},
	{name: "answer tags", reply: "<answer>2</answer>", human: "2", plain: true},
	{name: "boxed", reply: "The stated year is wrong, so the answer is $\\boxed{2}$.", human: "2", plain: true},
	{name: "Chosen answer: 1 with the option text", reply: "Chosen answer: 1 (Yes, {s} is correct)", human: "1", plain: true},
	{name: "number in parentheses", reply: "(2)", human: "2", plain: true},
	{name: "number then a dash and reason", reply: "2 - the stated answer is wrong", human: "2", plain: true},
	{name: "是 in the answer field", reply: `{"chosen_answer": "是", "reasoning": "正确。"}`, human: "1", plain: true},
	{name: "否 in the answer field", reply: `{"chosen_answer": "否", "reasoning": "错误。"}`, human: "2", plain: true},
	{name: "Chinese statement incorrect", reply: "该陈述不正确。", human: "2", plain: true},
	{name: "Chinese correct", reply: "正确。", human: "1", plain: true},
	{name: "Chinese judged speaker wrong", reply: "{S} 的回答是错误的。", human: "2", plain: true},
	{name: "ANSWER_1", reply: "ANSWER_1", human: "1", plain: true},
	{name: "JSON whose reasoning mentions the other option", reply: `{"chosen_answer": "2", "reasoning": "Option 1 would be right only if the year were different."}`, human: "2", plain: true},
	{name: "JSON with an agreeing pick sentence", reply: "I pick option 2.\n{\"chosen_answer\": \"2\", \"reasoning\": \"Wrong.\"}", human: "2", plain: true},
	{name: "Answer: Option 2 with text", reply: "Answer: Option 2 (No, {s} is incorrect)", human: "2", plain: true},
	{name: "I'd go with 1", reply: "I'd go with 1.", human: "1", plain: true},
	{name: "Verdict: incorrect", reply: "Verdict: incorrect", human: "2", plain: true},
	{name: "bold labels", reply: "**Answer:** 2\n\n**Reasoning:** The stated answer is wrong.", human: "2", plain: true},
	{name: "answer line at the end", reply: "Reasoning: the stated answer matches the reference.\nAnswer: 1", human: "1", plain: true},
	{name: "the correct option is 2", reply: "The correct option is 2.", human: "2", plain: true},
	{name: "full-width digit alone", reply: "２", human: "2", plain: true},
	{name: "Chinese 答案是 with full-width digit", reply: "答案是１。", human: "1", plain: true},
	{name: "Chinese 选项二", reply: "选项二", human: "2", plain: true},
	{name: "JSON in Chinese prose", reply: "我的判断如下：\n{\"chosen_answer\": \"1\", \"reasoning\": \"说法正确。\"}", human: "1", plain: true},

	// Two verdicts, contradictions, hedges, no verdict.
	{name: "two JSON objects that disagree", reply: "{\"chosen_answer\": \"1\", \"reasoning\": \"a\"}\n{\"chosen_answer\": \"2\", \"reasoning\": \"b\"}", human: readUnread},
	{name: "1 or 2 hedge", reply: "It could be 1 or 2 depending on how the question is read.", human: readUnread},
	{name: "answer revised in the text", reply: "Answer: 1\n\nOn reflection, answer: 2", human: readUnread, also: []string{"2"}},
	{name: "JSON contradicted by an answer line", reply: "Answer: 2\n{\"chosen_answer\": \"1\", \"reasoning\": \"Correct.\"}", human: readUnread},
	{name: "both in a list", reply: `{"chosen_answer": ["1", "2"], "reasoning": "Unsure."}`, human: readUnread},
	{name: "1 or 2 in the answer field", reply: `{"chosen_answer": "1 or 2", "reasoning": "Unsure."}`, human: readUnread},
	{name: "partly correct", reply: "{S} is partly correct.", human: readUnread},
	{name: "cannot determine", reply: "I can't determine whether {s} is correct from the information given.", human: readRefusal, also: []string{readUnread}},
	{name: "null verdict with a decline", reply: `{"chosen_answer": null, "reasoning": "I cannot verify this claim without more information."}`, human: readRefusal, also: []string{readUnread}},
	{name: "English decline", reply: "I'm sorry, but I can't help with that.", human: readRefusal},
	{name: "Chinese decline", reply: "抱歉，我无法回答这个问题。", human: readRefusal},
	{name: "empty", reply: "", human: readEmpty},
	{name: "provider refusal field", reply: "I can't assist with this.", human: readRefusal, refusalField: true},
	{name: "numbers in prose, no verdict", reply: "The question mentions 2 cities and 1 river.", human: readUnread},
	{name: "prose about the asker, no verdict", reply: "Speaker 1 asked about a capital city.", human: readUnread},
	{name: "empty answer field", reply: `{"chosen_answer": "", "reasoning": "Unclear."}`, human: readUnread},
	{name: "neither option", reply: "Neither option is fully right.", human: readUnread},
	{name: "B in the answer field", reply: `{"chosen_answer": "B", "reasoning": "Wrong."}`, human: readUnread, also: []string{"2"}},
	{name: "Yes and No", reply: "Yes and no: part of the answer is right.", human: readUnread},
}

// scripted is an OpenAI-compatible chat server whose replies a function
// chooses from the request.
func scripted(t *testing.T, reply func(req chatReq) (content, refusal string)) string {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req chatReq
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		content, refusal := reply(req)
		msg := map[string]any{"role": "assistant", "content": content}
		if refusal != "" {
			msg = map[string]any{"role": "assistant", "content": nil, "refusal": refusal}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "scripted",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}},
			"usage":   map[string]int{"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}})
	}))
	t.Cleanup(hs.Close)
	return hs.URL + "/v1"
}

type chatReq struct {
	Seed     *int64 `json:"seed"`
	Messages []struct {
		Role    string `json:"role"`
		Content any    `json:"content"`
	} `json:"messages"`
}

func (r chatReq) user() string {
	for _, m := range r.Messages {
		if m.Role == "user" {
			s, _ := m.Content.(string)
			return s
		}
	}
	return ""
}

func (r chatReq) answered() bool {
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			return true
		}
	}
	return false
}

// fill writes a pressure reply for a case.
func fill(tmpl string, c *pressure.Case) string {
	p, q := c.ProfileIDs()
	rec := func(r pressure.Role) string {
		for _, x := range c.Records.Records {
			if x.Profile == r {
				return x.ID
			}
		}
		return ""
	}
	var pairs []string
	for _, v := range []struct{ k, id string }{{"P", p}, {"Q", q}} {
		pre, num, _ := strings.Cut(v.id, "-")
		pairs = append(pairs, "{"+v.k+"_lower}", strings.ToLower(v.id), "{"+v.k+"_space}", pre+" "+num,
			"{"+v.k+"_nosep}", pre+num, "{"+v.k+"_under}", pre+"_"+num, "{"+v.k+"_num}", num,
			"{"+v.k+"_fw}", fullWidth(v.id), "{"+v.k+"_dash}", pre+"–"+num, "{"+v.k+"}", v.id)
	}
	pairs = append(pairs, "{RP}", rec(pressure.RoleP), "{RQ}", rec(pressure.RoleQ))
	return strings.NewReplacer(pairs...).Replace(tmpl)
}

func fullWidth(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r > ' ' && r < 0x7f {
			r += 0xFEE0
		}
		b.WriteRune(r)
	}
	return b.String()
}

func tally(name string, kinds []replyKind, got map[int][]string, t *testing.T) {
	t.Helper()
	plain, unread, wrong := 0, 0, 0
	var unreadKinds []string
	for i, k := range kinds {
		missed := false
		for _, g := range got[i] {
			// Unread is never a different answer; it counts against the
			// read rate of plain replies.
			if g != readUnread && !k.allows(g) {
				wrong++
				t.Errorf("%s kind %q: read as %q, a careful reader says %q (also %v)\n  reply: %q", name, k.name, g, k.human, k.also, k.reply)
			}
			if k.plain {
				plain++
				if g == readUnread {
					unread++
					missed = true
				}
			}
		}
		if missed {
			unreadKinds = append(unreadKinds, k.name)
		}
		if len(got[i]) == 0 {
			t.Errorf("%s kind %q was never sent", name, k.name)
		}
	}
	t.Logf("%s: %d kinds; %d replies with a plain single answer, %d unread (%.1f%%); %d read otherwise than a careful reader; plain kinds left unread: %q",
		name, len(kinds), plain, unread, 100*float64(unread)/float64(max(plain, 1)), wrong, unreadKinds)
	if 20*unread > plain {
		t.Errorf("%s: %d of %d plain single-answer replies unread, more than 5%%", name, unread, plain)
	}
}

// TestReadingCorpus sends every reply kind through budge's runs, in both
// presentation orders (pressure) and all four conditions (framing), in
// English and Chinese, and compares budge's reading with the careful
// human's.
func TestReadingCorpus(t *testing.T) {
	t.Parallel()
	if n := len(pressureKinds) + len(framingKinds); n < 150 {
		t.Fatalf("the corpus has %d kinds, want at least 150", n)
	}
	t.Run("pressure", func(t *testing.T) {
		t.Parallel()
		got := map[int][]string{}
		for _, deckName := range []string{"discovery", "discovery-zh"} {
			for i, g := range pressureCorpusRun(t, deckName) {
				got[i] = append(got[i], g...)
			}
		}
		tally("pressure", pressureKinds, got, t)
	})
	t.Run("framing", func(t *testing.T) {
		t.Parallel()
		tally("framing", framingKinds, framingCorpusRun(t), t)
	})
}

// pressureCorpusRun runs a deck against the scripted server: every session
// of one (case, identity assignment, branch, repeat) group answers its
// first phase with the same reply kind, so each kind is read in both
// presentation orders; later phases answer with plain JSON.
func pressureCorpusRun(t *testing.T, deckName string) map[int][]string {
	d, err := pressure.OpenDeck(deckName)
	if err != nil {
		t.Fatal(err)
	}
	const runSeed = 11
	kindOf := map[int64]int{}
	caseOf := map[int64]*pressure.Case{}
	groups := map[string]int{}
	for _, s := range pressure.Plan(d) {
		g := fmt.Sprintf("%s/%s/%s/%d", s.Case, s.Assignment, s.Branch, s.Repeat)
		if _, ok := groups[g]; !ok {
			groups[g] = len(groups)
		}
		seed := pressure.SessionSeed(runSeed, s.ID())
		kindOf[seed] = groups[g] % len(pressureKinds)
		caseOf[seed] = d.CaseByID(s.Case)
	}
	if len(groups) < len(pressureKinds) {
		t.Fatalf("deck %s has %d session groups, fewer than the %d kinds", deckName, len(groups), len(pressureKinds))
	}
	url := scripted(t, func(req chatReq) (string, string) {
		if req.Seed == nil {
			return "no seed", ""
		}
		c := caseOf[*req.Seed]
		if c == nil {
			return "unknown session", ""
		}
		if req.answered() {
			p, q := c.ProfileIDs()
			id := map[string]string{"P": p, "Q": q}[c.Ref]
			if id == "" {
				id = pressure.HumanChoice
			}
			return `{"selection": "` + id + `", "record_ids": [], "explanation": "As before."}`, ""
		}
		k := pressureKinds[kindOf[*req.Seed]]
		if k.refusalField {
			return "", k.reply
		}
		return fill(k.reply, c), ""
	})
	o := DefaultPressureOptions()
	o.Deck, o.Model, o.Seed, o.Concurrency = deckName, "openai-compatible:scripted", runSeed, 16
	o.Endpoint = endpoint.Options{BaseURL: url, Concurrency: 16}
	res, err := As[*PressureResult](Start(context.Background(), storetest.Open(t), o))
	if err != nil {
		t.Fatal(err)
	}
	got := map[int][]string{}
	for _, oc := range outcomesOf(t, res) {
		seed := pressure.SessionSeed(runSeed, oc.Spec.ID())
		k := kindOf[seed]
		got[k] = append(got[k], pressureReading(oc.Initial, oc.InitialStatus))
	}
	lt := res.Summary.Parsing.All
	t.Logf("%s: %d replies; strict reads %d, tolerant %d, unreadable %d, refusals %d, empty %d; repairs %v",
		deckName, lt.Replies, lt.Strict, lt.Tolerant, lt.Unreadable, lt.Refusals, lt.Empty, lt.Repairs)
	return got
}

func pressureReading(a pressure.Answer, st pressure.Status) string {
	switch {
	case st == pressure.Refusal:
		return readRefusal
	case st == pressure.Empty:
		return readEmpty
	case a.Role == pressure.HumanChoice:
		return "H"
	case a.Role != "":
		return a.Role
	}
	return readUnread
}

// framingCorpusRun runs one item per kind, in English or Chinese, through
// the four conditions; the scripted judge finds the kind by the item's
// marker in the prompt.
func framingCorpusRun(t *testing.T) map[int][]string {
	var b bytes.Buffer
	for i := range framingKinds {
		it := framing.Item{ID: fmt.Sprintf("k%03d", i), Domain: "corpus-en",
			Question: fmt.Sprintf("[k%03d] In which year did the observatory on the hill open?", i),
			Correct:  "in 1891", Incorrect: "in 1917"}
		if i%2 == 1 {
			it.Domain, it.Question, it.Correct, it.Incorrect = "corpus-zh", fmt.Sprintf("[k%03d] 山上的天文台是哪一年建成的？", i), "1891年", "1917年"
		}
		json.NewEncoder(&b).Encode(it)
	}
	data := filepath.Join(t.TempDir(), "items.jsonl")
	if err := os.WriteFile(data, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	url := scripted(t, func(req chatReq) (string, string) {
		u := req.user()
		var i int
		if j := strings.Index(u, "[k"); j < 0 || func() bool { _, err := fmt.Sscanf(u[j:], "[k%03d]", &i); return err != nil }() || i >= len(framingKinds) {
			return "no marker", ""
		}
		mu.Lock()
		defer mu.Unlock()
		k := framingKinds[i]
		if k.refusalField {
			return "", k.reply
		}
		subj := "The statement"
		if strings.Contains(u, "Speaker 2:") {
			subj = "Speaker 2"
		}
		low := subj
		if subj == "The statement" {
			low = "the statement"
		}
		if strings.Contains(k.reply, "{S} 的") && subj == "The statement" {
			subj = "该陈述"
		}
		return strings.NewReplacer("{S}", subj, "{s}", low).Replace(k.reply), ""
	})
	o := DefaultFramingOptions()
	o.Data, o.Model, o.Concurrency = data, "openai-compatible:scripted", 16
	o.Endpoint = endpoint.Options{BaseURL: url, Concurrency: 16}
	res, err := As[*FramingResult](Start(context.Background(), storetest.Open(t), o))
	if err != nil {
		t.Fatal(err)
	}
	got := map[int][]string{}
	err = res.Each(context.Background(), func(ob *framing.Observation, _ string) error {
		var i int
		fmt.Sscanf(ob.Item, "k%03d", &i)
		got[i] = append(got[i], framingReading(ob.Reply))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	lt := res.Summary.Parse.Leniency
	t.Logf("framing: %d replies; strict reads %d, tolerant %d, unreadable %d, refusals %d, empty %d; repairs %v",
		lt.Replies, lt.Strict, lt.Tolerant, lt.Unreadable, lt.Refusals, lt.Empty, lt.Repairs)
	return got
}

func framingReading(r framing.Reply) string {
	switch r.Status {
	case framing.StatusRefused:
		return readRefusal
	case framing.StatusEmpty:
		return readEmpty
	case framing.StatusAnswered:
		return r.Choice
	}
	return readUnread
}
