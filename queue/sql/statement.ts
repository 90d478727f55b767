// A named statement: node-postgres prepares it once per connection and reuses the plan.
export interface Statement {
  name: string;
  text: string;
}

export const statement = (name: string, text: string): Statement => ({ name: `herald_${name}`, text: text.trim() });

/** A lease of `$n` milliseconds from now. */
export const leaseFromNow = (param: string) => `now() + make_interval(secs => ${param}::float8 / 1000)`;
