// Loads a module of deploy/console for the node tests: from a data: URL (the folder has no
// package.json, so node would take its .js files for CommonJS), its "./NAME.js" imports
// turned into data: URLs of those modules in turn, as deploy/console/boot.js does with Blobs.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const folder = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../deploy/console');
const urls = new Map();

function dataURL(name) {
    if (!urls.has(name)) {
        const source = readFileSync(path.join(folder, name), 'utf8')
            .replace(/from\s+'\.\/([a-z-]+\.js)'/g, (all, dependency) => `from '${dataURL(dependency)}'`);
        urls.set(name, 'data:text/javascript;base64,' + Buffer.from(source).toString('base64'));
    }
    return urls.get(name);
}

/// The module deploy/console/NAME (e.g. 'store.js').
export function load(name) {
    return import(dataURL(name));
}
