package stats

// t975 holds the 0.975 quantiles of Student's t for 1 to 30 degrees of
// freedom, computed to nine decimals by bisection on a numerically
// integrated t density (they agree with printed tables: 12.7062, 4.3027,
// 2.3646 for 7, 2.0423 for 30).
var t975 = [...]float64{12.706204736, 4.302652730, 3.182446305, 2.776445105, 2.570581836, 2.446911851, 2.364624252,
	2.306004135, 2.262157163, 2.228138852, 2.200985160, 2.178812830, 2.160368656, 2.144786688, 2.131449546, 2.119905299,
	2.109815578, 2.100922040, 2.093024054, 2.085963447, 2.079613845, 2.073873068, 2.068657610, 2.063898562, 2.059538553,
	2.055529439, 2.051830516, 2.048407142, 2.045229642, 2.042272456}

// T975 is the 0.975 quantile of Student's t with df degrees of freedom (the
// multiplier of a two-sided 95% interval): from a table up to 30 and by the
// Cornish–Fisher expansion beyond (error below 1e-7 there).
func T975(df int) float64 {
	if df < 1 {
		return 0
	}
	if df <= len(t975) {
		return t975[df-1]
	}
	z, v := Z95, float64(df)
	z2 := z * z
	return z + z*(z2+1)/(4*v) + z*(5*z2*z2+16*z2+3)/(96*v*v) + z*(3*z2*z2*z2+19*z2*z2+17*z2-15)/(384*v*v*v) +
		z*(79*z2*z2*z2*z2+776*z2*z2*z2+1482*z2*z2-1920*z2-945)/(92160*v*v*v*v)
}
