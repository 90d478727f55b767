// One shared ticking clock for relative times ("12s ago", lease countdowns), instead of a
// timer per table cell.

class Clock {
  now = $state(Date.now());
  constructor() {
    setInterval(() => (this.now = Date.now()), 1000);
  }
}

export const clock = new Clock();
