package stats

// Seeded draws. Every per-session or per-item random quantity in budge is a
// pure function of a recorded seed and the names of what is drawn: the
// 64-bit FNV-1a hash of the parts in order (integers as 8 little-endian
// bytes, strings as their bytes), then, for a uniform number, the
// splitmix64 finaliser. Stored runs and goldens depend on these values, so
// they must never change.

// SeedHash is an FNV-1a (64-bit) hash being built from seed parts.
// Start from NewSeedHash and add parts with Uint64 and Text.
type SeedHash uint64

const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// NewSeedHash is the hash of nothing (the FNV-1a offset basis).
func NewSeedHash() SeedHash { return fnvOffset64 }

// Uint64 adds v as 8 little-endian bytes.
func (h SeedHash) Uint64(v uint64) SeedHash {
	for i := 0; i < 8; i++ {
		h = (h ^ SeedHash(byte(v>>(8*i)))) * fnvPrime64
	}
	return h
}

// Text adds the bytes of s.
func (h SeedHash) Text(s string) SeedHash {
	for i := 0; i < len(s); i++ {
		h = (h ^ SeedHash(s[i])) * fnvPrime64
	}
	return h
}

// Int63 is the hash as a non-negative int64 (its top 63 bits), the form
// sent to providers as a generation seed.
func (h SeedHash) Int63() int64 { return int64(uint64(h) >> 1) }

// Uniform is a number in [0, 1) fixed by the hash: the splitmix64 finaliser,
// so nearby inputs give unrelated outputs, then the top 53 bits.
func (h SeedHash) Uniform() float64 {
	x := uint64(h)
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / float64(uint64(1)<<53)
}

// SessionSeed derives the generation seed of one session (or any named
// unit) from the run seed and its id, so repeats are independent samples
// and a rerun with the same seed sends the same seeds.
func SessionSeed(runSeed uint64, id string) int64 {
	return NewSeedHash().Uint64(runSeed).Text(id).Int63()
}

// Draw is a uniform number in [0, 1) fixed by the seed and the id alone.
func Draw(seed uint64, id string) float64 {
	return NewSeedHash().Uint64(seed).Text(id).Uniform()
}
