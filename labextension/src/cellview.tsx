/**
 * A code entry's cell in the chat: a link to it with a thumbnail of the figure it drew (or a
 * note that it is gone), and, folded, what a later model request was shown of its figures.
 * Apart from ``entry.tsx`` because these read the notebook through ``ChatModel``, not the entry.
 */
import React from 'react';

import { ChatModel } from './model';
import { Entry } from './tokens';

/** A code entry's cell: a thumbnail of the figure it drew (read from the cell) and a link to it. */
export function CellLink(props: { entry: Entry; model: ChatModel }): JSX.Element | null {
  const e = props.entry;
  if (e.kind !== 'code' || !e.cellId) {
    return null;
  }
  if (props.model.holds(e) === false) {
    // A failed attempt's cell, replaced by the fix (or deleted): its link did nothing.
    return <div className="jp-aici-cell jp-aici-cell-gone">cell no longer in the notebook</div>;
  }
  const image = props.model.figure(e);
  const go = (ev: React.MouseEvent) => {
    ev.preventDefault();
    props.model.reveal(e);
  };
  return (
    <div className="jp-aici-cell">
      {image && (
        <a href="#" className="jp-aici-figure" title="Show the figure's cell" onClick={go}>
          <img src={image} alt="figure drawn by the cell" />
        </a>
      )}
      <a href="#" className="jp-aici-cell-link" onClick={go}>
        {image ? 'figure in the notebook ↗' : 'show the cell ↗'}
      </a>
    </div>
  );
}

/**
 * What a later model request was shown of an attempt's figures, folded: the picture (for a model
 * that takes images) and the words the model read.
 */
export function ShownFigures(props: { entry: Entry; model: ChatModel }): JSX.Element | null {
  const e = props.entry;
  if (e.kind !== 'code' || !e.shown?.length) {
    return null;
  }
  const pictures = e.shown.filter(f => f.picture).length;
  const n = e.shown.length;
  return (
    <details className="jp-aici-shown">
      <summary>
        {n === 1 ? 'the figure' : `${n} figures`} the model was {pictures ? 'shown' : 'told about'}
      </summary>
      {e.shown.map((f, i) => {
        const image = f.picture ? props.model.shownPicture(e, i) : null;
        return (
          <div key={i} className="jp-aici-shown-figure">
            {f.picture &&
              (image ? (
                <>
                  <div className="jp-aici-shown-label">The picture the model was sent:</div>
                  <img className="jp-aici-shown-picture" src={image} alt="the picture the model was sent" />
                </>
              ) : (
                <div className="jp-aici-cell-gone">the model was sent its picture (no longer in the notebook)</div>
              ))}
            {f.text && (
              <>
                <div className="jp-aici-shown-label">What the model was told about the figure:</div>
                <pre className="jp-aici-shown-text">{f.text}</pre>
              </>
            )}
          </div>
        );
      })}
    </details>
  );
}
