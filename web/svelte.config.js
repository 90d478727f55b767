// Svelte 5 compiles `<script lang="ts">` natively; no preprocessing needed.
export default {
  compilerOptions: { runes: true },
};
