export default function (output) { return output.length; }
export const named = (output) => output.split('').reverse().join('');
