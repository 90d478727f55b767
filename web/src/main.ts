import { mount } from 'svelte';
import App from './App.svelte';
import { board } from './lib/store.svelte';
import './app.css';

const app = mount(App, { target: document.getElementById('app')! });
// One EventSource for the whole tab, opened once; every view reads from `board`.
board.start();

export default app;
