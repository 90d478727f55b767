// Fan-out source: splits the text into lines; each `count` job reads them from ctx.parents.
export default async function split(payload: { text: string }) {
  return { lines: payload.text.split('\n').filter((l) => l.trim() !== '') };
}
