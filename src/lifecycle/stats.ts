/** Small statistics for the scorecard: Wilson intervals and a chi-squared split check (percentiles: sketch.ts). */

const Z95 = 1.959963984540054;

/** 95% Wilson score interval of `successes` out of `n`, [low, high]; null when n is 0. */
export function wilson(successes: number, n: number): [number, number] | null {
  if (n === 0) return null;
  const p = successes / n;
  const z2 = Z95 * Z95;
  const centre = (p + z2 / (2 * n)) / (1 + z2 / n);
  const half = (Z95 * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / (1 + z2 / n);
  return [round4(Math.max(0, centre - half)), round4(Math.min(1, centre + half))];
}

/** Complementary error function (Numerical Recipes' erfcc, |error| < 1.2e-7). */
function erfc(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const r =
    t *
    Math.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
  return x >= 0 ? r : 2 - r;
}

export interface SplitCheck {
  expected_treatment_share: number;
  observed_treatment_share: number;
  units: number;
  chi_squared: number;
  p_value: number;
  /** the split is unlikely to be the configured one (p < 0.001) */
  mismatch: boolean;
}

/** The threshold experimentation platforms use: a real mismatch, not bad luck */
const SRM_P = 0.001;

/** Sample-ratio-mismatch check: chi-squared, one degree of freedom, of `treatment` of `units` against `share`. */
export function splitCheck(treatment: number, units: number, share: number): SplitCheck | null {
  if (units === 0 || share <= 0 || share >= 1) return null;
  const expT = units * share;
  const expC = units - expT;
  const control = units - treatment;
  const chi = (treatment - expT) ** 2 / expT + (control - expC) ** 2 / expC;
  // P(X > chi) for one degree of freedom is erfc(sqrt(chi / 2))
  const p = erfc(Math.sqrt(chi / 2));
  return {
    expected_treatment_share: share,
    observed_treatment_share: round4(treatment / units),
    units,
    chi_squared: round4(chi),
    p_value: Number(p.toPrecision(4)),
    mismatch: p < SRM_P,
  };
}

export const round4 = (n: number): number => Math.round(n * 1e4) / 1e4;
