import { parseHash, type Route } from './route';

class Router {
  route = $state<Route>(parseHash(location.hash));

  constructor() {
    addEventListener('hashchange', () => {
      this.route = parseHash(location.hash);
    });
  }

  go(hash: string): void {
    location.hash = hash.replace(/^#/, '');
  }
}

export const router = new Router();
