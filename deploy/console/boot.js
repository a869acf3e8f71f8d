// Starts the console's ES modules. mosquitto's web server (http_dir) sends no Content-Type,
// and browsers load a module script only when it comes as JavaScript; so when app.js does
// not, each module is fetched and imported from a Blob of type text/javascript, its
// "./NAME.js" imports pointing at the modules already made. A server that sends the right
// type gets a plain import('./app.js').
(function () {
    'use strict';
    // Never inside another page's frame (clickjacking: a page over ours steering a dispatcher's
    // clicks). A <meta> Content-Security-Policy cannot say frame-ancestors, and mosquitto's web
    // server sends no headers of ours: so the page itself stops when it is not the top window.
    if (window.top !== window.self) {
        var main = document.querySelector('main');
        if (main) main.hidden = true;
        var state = document.getElementById('connection');
        state.setAttribute('data-state', 'framed');
        state.textContent = 'the console does not run inside a frame of another page: open it in a tab of its own';
        return;
    }
    // Dependencies first: each module imports only modules listed before it.
    var order = ['mqtt.js', 'history.js', 'store.js', 'trips.js', 'event-marks.js', 'alerts.js', 'lists.js', 'devices-layer.js', 'events-layer.js', 'map.js', 'actions.js', 'replay.js', 'app.js'];

    function fail(error) {
        var box = document.getElementById('connection');
        box.setAttribute('data-state', 'failed');
        box.textContent = 'the console could not start: ' + (error && error.message ? error.message : error);
    }

    function viaBlobs(first) {
        var urls = {};
        var texts = [first];
        return Promise.all(order.slice(1).map(function (name) {
            return fetch(name, { cache: 'no-cache' }).then(function (r) {
                if (!r.ok) throw new Error(name + ': HTTP ' + r.status);
                return r.text();
            });
        })).then(function (rest) {
            texts = texts.concat(rest);
            order.forEach(function (name, i) {
                var source = texts[i].replace(/from\s+'\.\/([a-z-]+\.js)'/g, function (all, dep) {
                    if (!urls[dep]) throw new Error(name + ' imports ' + dep + ', which is not loaded before it');
                    return "from '" + urls[dep] + "'";
                });
                source += '\n//# sourceURL=' + new URL(name, location.href).href + '\n';
                urls[name] = URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
            });
            return import(urls['app.js']);
        });
    }

    fetch(order[0], { cache: 'no-cache' }).then(function (r) {
        if (!r.ok) throw new Error(order[0] + ': HTTP ' + r.status);
        if (/javascript/.test(r.headers.get('content-type') || '')) return import('./app.js');
        return r.text().then(viaBlobs);
    }).catch(fail);
})();
