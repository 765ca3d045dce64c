// features.js loads the feature modules: each registers its panels and menu entries with
// views/registry.js when imported. Add a feature with one line here.
import './views/channel.js';
import './views/shortcuts.js';
import './views/complete.js';
