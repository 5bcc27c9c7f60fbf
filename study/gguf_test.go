package study

// A writer of tiny random-weight GGUF models, so the Ollama integration test
// needs no downloaded model: GGUF v3, F32 tensors, a llama architecture of
// 2 blocks of width 64, and a SentencePiece vocabulary of the control
// tokens, the 256 byte tokens and printable ASCII, enough to spell any JSON.
// The model says nothing sensible; the test only relies on what a real
// server guarantees.

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
)

// GGUF value types.
const (
	ggufUint32  = 4
	ggufInt32   = 5
	ggufFloat32 = 6
	ggufString  = 8
	ggufArray   = 9
)

const ggufAlignment = 32

type ggufKV struct {
	key string
	typ uint32
	val any
}

type ggufTensor struct {
	name string
	dims []uint64 // ggml order: dims[0] varies fastest
	data []float32
}

type ggufWriter struct {
	w   *bufio.Writer
	n   int64
	err error
}

func (g *ggufWriter) write(v any) {
	if g.err != nil {
		return
	}
	g.err = binary.Write(g.w, binary.LittleEndian, v)
	g.n += int64(binary.Size(v))
}

func (g *ggufWriter) str(s string) {
	g.write(uint64(len(s)))
	if g.err == nil {
		_, g.err = io.WriteString(g.w, s)
		g.n += int64(len(s))
	}
}

func (g *ggufWriter) value(typ uint32, v any) {
	switch typ {
	case ggufString:
		g.str(v.(string))
	case ggufArray:
		switch a := v.(type) {
		case []string:
			g.write(uint32(ggufString))
			g.write(uint64(len(a)))
			for _, s := range a {
				g.str(s)
			}
		case []float32:
			g.write(uint32(ggufFloat32))
			g.write(uint64(len(a)))
			g.write(a)
		case []int32:
			g.write(uint32(ggufInt32))
			g.write(uint64(len(a)))
			g.write(a)
		default:
			g.err = fmt.Errorf("gguf: unsupported array %T", v)
		}
	default:
		g.write(v)
	}
}

func (g *ggufWriter) pad() {
	for g.n%ggufAlignment != 0 {
		g.write(uint8(0))
	}
}

// writeGGUF writes a GGUF v3 file.
func writeGGUF(path string, kvs []ggufKV, tensors []ggufTensor) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	g := &ggufWriter{w: bufio.NewWriter(f)}
	g.write([4]byte{'G', 'G', 'U', 'F'})
	g.write(uint32(3))
	g.write(uint64(len(tensors)))
	g.write(uint64(len(kvs)))
	for _, kv := range kvs {
		g.str(kv.key)
		g.write(kv.typ)
		g.value(kv.typ, kv.val)
	}
	var off uint64
	for _, t := range tensors {
		g.str(t.name)
		g.write(uint32(len(t.dims)))
		for _, d := range t.dims {
			g.write(d)
		}
		g.write(uint32(0)) // GGML_TYPE_F32
		g.write(off)
		size := uint64(len(t.data) * 4)
		off += (size + ggufAlignment - 1) / ggufAlignment * ggufAlignment
	}
	g.pad()
	for _, t := range tensors {
		g.write(t.data)
		g.pad()
	}
	if g.err == nil {
		g.err = g.w.Flush()
	}
	if err := f.Close(); g.err == nil {
		g.err = err
	}
	return g.err
}

// wordPieces returns SentencePiece tokens for the words of a text: every
// prefix of "▁word", so that the tokenizer's merges (highest score first,
// each merge must make a token) reach the whole word. Prompts made of these
// words then cost a token a word instead of a token a character.
func wordPieces(text string, limit int) []string {
	seen := map[string]bool{}
	var out []string
	for _, w := range strings.Fields(text) {
		r := []rune("▁" + w)
		for n := 2; n <= len(r) && n <= 16; n++ {
			p := string(r[:n])
			if !seen[p] && len(out) < limit {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// tinyLlama writes a random-weight llama model of about 600 KB (more with a
// corpus: its words become tokens). With chatML, the file carries a ChatML
// chat template.
func tinyLlama(path string, seed uint64, chatML bool, corpus ...string) error {
	const (
		embd   = 64
		blocks = 2
		ff     = 128
		heads  = 4
	)
	// Vocabulary: <unk> <s> </s>, the byte tokens, then "▁" and printable
	// ASCII, with descending scores.
	tokens := []string{"<unk>", "<s>", "</s>"}
	types := []int32{2, 3, 3}
	for b := 0; b < 256; b++ {
		tokens = append(tokens, fmt.Sprintf("<0x%02X>", b))
		types = append(types, 6)
	}
	tokens = append(tokens, "▁")
	types = append(types, 1)
	for c := 33; c < 127; c++ {
		tokens = append(tokens, string(rune(c)))
		types = append(types, 1)
	}
	scores := make([]float32, len(tokens))
	for i := range scores {
		scores[i] = -float32(i)
	}
	have := map[string]bool{}
	for _, tok := range tokens {
		have[tok] = true
	}
	for _, p := range wordPieces(strings.Join(corpus, " "), 12000) {
		if !have[p] {
			tokens = append(tokens, p)
			types = append(types, 1)
			scores = append(scores, float32(len([]rune(p)))) // longer pieces merge first
		}
	}
	vocab := uint64(len(tokens))
	kvs := []ggufKV{
		{"general.architecture", ggufString, "llama"},
		{"general.name", ggufString, "budge-tiny-random"},
		{"general.alignment", ggufUint32, uint32(ggufAlignment)},
		{"llama.context_length", ggufUint32, uint32(4096)},
		{"llama.embedding_length", ggufUint32, uint32(embd)},
		{"llama.block_count", ggufUint32, uint32(blocks)},
		{"llama.feed_forward_length", ggufUint32, uint32(ff)},
		{"llama.attention.head_count", ggufUint32, uint32(heads)},
		{"llama.attention.head_count_kv", ggufUint32, uint32(heads)},
		{"llama.attention.layer_norm_rms_epsilon", ggufFloat32, float32(1e-5)},
		{"llama.rope.dimension_count", ggufUint32, uint32(embd / heads)},
		{"llama.vocab_size", ggufUint32, uint32(vocab)},
		{"tokenizer.ggml.model", ggufString, "llama"},
		{"tokenizer.ggml.tokens", ggufArray, tokens},
		{"tokenizer.ggml.scores", ggufArray, scores},
		{"tokenizer.ggml.token_type", ggufArray, types},
		{"tokenizer.ggml.unknown_token_id", ggufUint32, uint32(0)},
		{"tokenizer.ggml.bos_token_id", ggufUint32, uint32(1)},
		{"tokenizer.ggml.eos_token_id", ggufUint32, uint32(2)},
	}
	if chatML {
		kvs = append(kvs, ggufKV{"tokenizer.chat_template", ggufString,
			"{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"})
	}
	rng := rand.New(rand.NewPCG(seed, 0x99f))
	random := func(n uint64) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(rng.NormFloat64() * 0.05)
		}
		return out
	}
	ones := func(n uint64) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = 1
		}
		return out
	}
	// Dimension 0 of every embedding is large, so it stays positive through
	// the residual stream and the final norm: the output weights in that
	// dimension act as a bias per token. Closing a string, an array or an
	// object, and ending, are favoured, so that a json_schema-constrained
	// answer finishes in a few tokens instead of running to the limit.
	embed, output := random(embd*vocab), random(embd*vocab)
	for t := uint64(0); t < vocab; t++ {
		embed[t*embd] = 3
		output[t*embd] = 0
	}
	for i, tok := range tokens {
		switch tok {
		case `"`, "</s>":
			output[uint64(i)*embd] = 1
		case "]", "}":
			output[uint64(i)*embd] = 0.6
		case ",":
			output[uint64(i)*embd] = 0.3
		}
	}
	tensors := []ggufTensor{
		{"token_embd.weight", []uint64{embd, vocab}, embed},
		{"output_norm.weight", []uint64{embd}, ones(embd)},
		{"output.weight", []uint64{embd, vocab}, output},
	}
	for b := 0; b < blocks; b++ {
		p := fmt.Sprintf("blk.%d.", b)
		tensors = append(tensors,
			ggufTensor{p + "attn_norm.weight", []uint64{embd}, ones(embd)},
			ggufTensor{p + "attn_q.weight", []uint64{embd, embd}, random(embd * embd)},
			ggufTensor{p + "attn_k.weight", []uint64{embd, embd}, random(embd * embd)},
			ggufTensor{p + "attn_v.weight", []uint64{embd, embd}, random(embd * embd)},
			ggufTensor{p + "attn_output.weight", []uint64{embd, embd}, random(embd * embd)},
			ggufTensor{p + "ffn_norm.weight", []uint64{embd}, ones(embd)},
			ggufTensor{p + "ffn_gate.weight", []uint64{embd, ff}, random(embd * ff)},
			ggufTensor{p + "ffn_up.weight", []uint64{embd, ff}, random(embd * ff)},
			ggufTensor{p + "ffn_down.weight", []uint64{ff, embd}, random(ff * embd)},
		)
	}
	return writeGGUF(path, kvs, tensors)
}
